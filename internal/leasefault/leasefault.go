// Package leasefault provides, for tests, a lease store wrapper whose
// function fields replace its methods, to inject failures and stalls into
// the lease protocol (wtf's mock.DialService shape).
//
// It is generic over the request and lease types instead of importing
// workerlease: workerlease's own in-package tests use it, and they cannot
// import a package that imports workerlease (an import cycle). A test
// package names its instance once:
//
//	type faultStore = leasefault.Store[workerlease.AcquireRequest, workerlease.Lease]
//	var _ workerlease.Store = (*faultStore)(nil)
package leasefault

import (
	"context"
	"time"
)

// LeaseStore is the method set of workerlease.Store, with its request and
// lease types as parameters.
type LeaseStore[Req, Lease any] interface {
	Acquire(ctx context.Context, req Req) (Lease, error)
	Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (Lease, error)
	Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error
}

// Store passes every call on to Store, except that a non-nil AcquireFunc,
// RenewFunc or ReleaseFunc is called in place of that method (it may call
// Store itself to pass the call on after a stall or a count). Set the
// function fields before the code under test can call the Store.
type Store[Req, Lease any] struct {
	Store       LeaseStore[Req, Lease]
	AcquireFunc func(ctx context.Context, req Req) (Lease, error)
	RenewFunc   func(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (Lease, error)
	ReleaseFunc func(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error
}

// Acquire calls AcquireFunc if set, else Store.Acquire.
func (f *Store[Req, Lease]) Acquire(ctx context.Context, req Req) (Lease, error) {
	if f.AcquireFunc != nil {
		return f.AcquireFunc(ctx, req)
	}
	return f.Store.Acquire(ctx, req)
}

// Renew calls RenewFunc if set, else Store.Renew.
func (f *Store[Req, Lease]) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (Lease, error) {
	if f.RenewFunc != nil {
		return f.RenewFunc(ctx, cluster, workerID, token, ttl, lastTimestampMS)
	}
	return f.Store.Renew(ctx, cluster, workerID, token, ttl, lastTimestampMS)
}

// Release calls ReleaseFunc if set, else Store.Release.
func (f *Store[Req, Lease]) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	if f.ReleaseFunc != nil {
		return f.ReleaseFunc(ctx, cluster, workerID, token, lastTimestampMS)
	}
	return f.Store.Release(ctx, cluster, workerID, token, lastTimestampMS)
}
