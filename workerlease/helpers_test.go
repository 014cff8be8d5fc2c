package workerlease

import (
	"context"
	"sync"
	"testing"
	"time"
)

// faultStore wraps a Store; a non-nil function field replaces the method, to
// inject failures and stalls.
type faultStore struct {
	Store
	acquire func(ctx context.Context, req AcquireRequest) (Lease, error)
	renew   func(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (Lease, error)
	release func(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error
}

func (f *faultStore) Acquire(ctx context.Context, req AcquireRequest) (Lease, error) {
	if f.acquire != nil {
		return f.acquire(ctx, req)
	}
	return f.Store.Acquire(ctx, req)
}

func (f *faultStore) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (Lease, error) {
	if f.renew != nil {
		return f.renew(ctx, cluster, workerID, token, ttl, lastTimestampMS)
	}
	return f.Store.Renew(ctx, cluster, workerID, token, ttl, lastTimestampMS)
}

func (f *faultStore) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	if f.release != nil {
		return f.release(ctx, cluster, workerID, token, lastTimestampMS)
	}
	return f.Store.Release(ctx, cluster, workerID, token, lastTimestampMS)
}

// skewed returns the bubble's clock shifted by d. Inside testing/synctest
// bubbles time starts at 2000-01-01, before the snowflake epoch, so every
// clock in these tests is shifted into the layout's range.
func skewed(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// toNov2026 moves the bubble's 2000-01-01 to 2026-11-21T10:00:00Z.
const toNov2026 = time.Duration(1795255200000-946684800000) * time.Millisecond

// keeperRig is one holder: a Service and a Keeper on a shared store, with
// the leases OnLease announced.
type keeperRig struct {
	svc    *Service
	k      *Keeper
	mu     sync.Mutex
	leases []Lease
}

func newKeeperRig(tb testing.TB, store Store, cfg Config, kc KeeperConfig) *keeperRig {
	tb.Helper()
	r := &keeperRig{svc: newTestService(tb, store, cfg)}
	kc.Service = r.svc
	kc.OnLease = func(l Lease) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.leases = append(r.leases, l)
	}
	k, err := NewKeeper(kc)
	if err != nil {
		tb.Fatalf("NewKeeper: %v", err)
	}
	r.k = k
	return r
}

// announced returns the leases OnLease received so far.
func (r *keeperRig) announced() []Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Lease(nil), r.leases...)
}

// closeKeeper closes k and fails the test on error.
func closeKeeper(tb testing.TB, k *Keeper, lastMS int64) {
	tb.Helper()
	if err := k.Close(context.Background(), lastMS); err != nil {
		tb.Errorf("Close: %v", err)
	}
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
