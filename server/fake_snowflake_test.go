package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// fakeFlake issues a counter, or err when set.
type fakeFlake struct {
	calls
	next   atomic.Int64
	err    error
	layout snowflake.Layout
}

func newFakeFlake(tb testing.TB) *fakeFlake {
	tb.Helper()
	l, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	f := &fakeFlake{layout: l}
	f.next.Store(1 << 40)
	return f
}

func (f *fakeFlake) Next() (int64, error) {
	f.record("Next")
	if f.err != nil {
		return 0, f.err
	}
	return f.next.Add(1), nil
}

func (f *fakeFlake) NextN(dst []int64) error {
	f.record("NextN")
	if f.err != nil {
		return f.err
	}
	for i := range dst {
		dst[i] = f.next.Add(1)
	}
	return nil
}

func (f *fakeFlake) Layout() snowflake.Layout { return f.layout }

// fakeLeases answers every call with lease, or err when set.
type fakeLeases struct {
	calls
	err   error
	lease workerlease.Lease
}

var testExpiry = time.Date(2026, 11, 21, 10, 0, 30, 123e6, time.UTC)

func newFakeLeases() *fakeLeases {
	return &fakeLeases{lease: workerlease.Lease{Cluster: "default", WorkerID: 7,
		Token: "AAAAAAAAAAAAAAAAAAAAAA", ExpiresAt: testExpiry, LastTimestampMS: 1700}}
}

func (f *fakeLeases) Acquire(ctx context.Context, cluster, holder string) (workerlease.Lease, error) {
	f.record("Acquire " + cluster)
	return f.lease, f.err
}

func (f *fakeLeases) Renew(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) (workerlease.Lease, error) {
	f.record("Renew " + cluster)
	return f.lease, f.err
}

func (f *fakeLeases) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	f.record("Release " + cluster)
	return f.err
}

func (f *fakeLeases) TTL() time.Duration { return 30 * time.Second }
func (f *fakeLeases) MaxWorkerID() int64 { return 1023 }

// fakeOwn is this instance's own lease, or none, and why it waits.
type fakeOwn struct {
	lease workerlease.Lease
	held  bool
	wait  workerlease.Wait
}

func (f *fakeOwn) Lease() (workerlease.Lease, bool)    { return f.lease, f.held }
func (f *fakeOwn) SecondsLeft(now time.Time) float64   { return 12.5 }
func (f *fakeOwn) Wait(now time.Time) workerlease.Wait { return f.wait }
