package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// testConcurrentAcquire races 200 acquirers for 64 IDs, first while every
// ID is new (grants insert rows), then once all are released (grants take
// rows over).
func testConcurrentAcquire(t *testing.T, e env) {
	const callers, maxWorkerID = 200, 63
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st := e.open(t)
	for _, round := range []string{"new", "released"} {
		holders := raceAcquire(ctx, t, st, round, callers, maxWorkerID)
		if got, want := len(holders), maxWorkerID+1; got != want {
			t.Errorf("%s IDs: %d granted, want %d", round, got, want)
		}
		// The database agrees on who holds what.
		for id, token := range holders {
			if err := st.Release(ctx, cluster, id, token, 0); err != nil {
				t.Errorf("Release(worker %d, token %q): %v", id, token, err)
			}
		}
	}
}

// raceAcquire runs callers concurrent Acquires and returns the granted
// worker IDs with their tokens, failing t on any ID granted twice.
func raceAcquire(ctx context.Context, t *testing.T, st workerlease.Store, round string, callers int, maxWorkerID int64) map[int64]string {
	t.Helper()
	type result struct {
		lease workerlease.Lease
		err   error
	}
	results := make(chan result, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			l, err := st.Acquire(ctx, acquireRequest(fmt.Sprintf("%s-%03d", round, i), maxWorkerID))
			results <- result{l, err}
		})
	}
	wg.Wait()
	close(results)

	holders := map[int64]string{}
	for r := range results {
		switch {
		case errors.Is(r.err, workerlease.ErrNoWorkerID):
		case r.err != nil:
			t.Errorf("Acquire: %v", r.err)
		case holders[r.lease.WorkerID] != "":
			t.Errorf("worker ID %d granted to %q and %q", r.lease.WorkerID, holders[r.lease.WorkerID], r.lease.Token)
		case r.lease.WorkerID < 0 || r.lease.WorkerID > maxWorkerID:
			t.Errorf("worker ID %d outside [0, %d]", r.lease.WorkerID, maxWorkerID)
		default:
			holders[r.lease.WorkerID] = r.lease.Token
		}
	}
	return holders
}

func testAcquireNew(t *testing.T, e env) {
	st := e.open(t)
	const ttl = 10 * time.Minute
	req := acquireRequest("token-a", 1023)
	req.TTL = ttl
	before := time.Now()
	got := mustAcquire(t, st, req)
	after := time.Now()

	want := workerlease.Lease{Cluster: cluster, WorkerID: 0, Token: "token-a", Holder: "leasetest", LastTimestampMS: 0, NoHistory: !e.genesis}
	exp := got.ExpiresAt
	got.ExpiresAt = time.Time{}
	if got != want {
		t.Errorf("Acquire = %+v, want %+v", got, want)
	}
	// The database's clock runs on this machine or close to it; a time zone
	// mix-up would be off by hours.
	const slack = time.Minute
	if exp.Location() != time.UTC || exp.Before(before.Add(ttl-slack)) || exp.After(after.Add(ttl+slack)) {
		t.Errorf("ExpiresAt = %v, want UTC about %v", exp, before.Add(ttl).UTC())
	}
	if got := mustAcquire(t, st, acquireRequest("token-b", 1023)).WorkerID; got != 1 {
		t.Errorf("second Acquire: worker ID %d, want 1", got)
	}
}

func testClustersIndependent(t *testing.T, e env) {
	st := e.open(t)
	for _, c := range []string{"east", "west"} {
		req := acquireRequest("token-"+c, 0)
		req.Cluster = c
		if got := mustAcquire(t, st, req); got.WorkerID != 0 || got.Cluster != c {
			t.Errorf("Acquire in %s = worker %d of %q, want worker 0 of %q", c, got.WorkerID, got.Cluster, c)
		}
	}
}

func testExpiredTakeover(t *testing.T, e env) {
	ttl := e.ttl
	st := e.open(t)
	req := acquireRequest("token-old", 0)
	req.TTL = ttl
	old := mustAcquire(t, st, req)
	if _, err := st.Renew(t.Context(), cluster, old.WorkerID, old.Token, ttl, 5000); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if _, err := st.Acquire(t.Context(), acquireRequest("token-new", 0)); !errors.Is(err, workerlease.ErrNoWorkerID) {
		t.Fatalf("Acquire while held: error = %v, want %v", err, workerlease.ErrNoWorkerID)
	}
	// Both clocks measure the same elapsed time; the margin covers rounding
	// (etcd's leases count whole seconds).
	time.Sleep(ttl + ttl/2)

	_, err := st.Renew(t.Context(), cluster, old.WorkerID, old.Token, ttl, 6000)
	if !errors.Is(err, workerlease.ErrLeaseExpired) {
		t.Errorf("Renew of expired lease: error = %v, want %v", err, workerlease.ErrLeaseExpired)
	}
	err = st.Release(t.Context(), cluster, old.WorkerID, old.Token, 6000)
	if !errors.Is(err, workerlease.ErrLeaseExpired) {
		t.Errorf("Release of expired lease: error = %v, want %v", err, workerlease.ErrLeaseExpired)
	}

	// The refused late renew and release still recorded 6000: the old
	// holder may have issued IDs up to it.
	taken := mustAcquire(t, st, acquireRequest("token-new", 0))
	if taken.WorkerID != old.WorkerID || taken.LastTimestampMS != 6000 {
		t.Errorf("takeover = worker %d with last_timestamp_ms %d, want worker %d with 6000",
			taken.WorkerID, taken.LastTimestampMS, old.WorkerID)
	}
	_, err = st.Renew(t.Context(), cluster, old.WorkerID, old.Token, ttl, 0)
	if !errors.Is(err, workerlease.ErrTokenMismatch) {
		t.Errorf("Renew of taken-over lease: error = %v, want %v", err, workerlease.ErrTokenMismatch)
	}
	err = st.Release(t.Context(), cluster, old.WorkerID, old.Token, 0)
	if !errors.Is(err, workerlease.ErrTokenMismatch) {
		t.Errorf("Release of taken-over lease: error = %v, want %v", err, workerlease.ErrTokenMismatch)
	}
	mustRenew(t, st, taken, 0) // the old token's attempts left the new lease alone
}

func testRenewTimestamp(t *testing.T, e env) {
	st := e.open(t)
	l := mustAcquire(t, st, acquireRequest("token-a", 0))
	prevExpiry := l.ExpiresAt
	for _, tc := range []struct{ renew, want int64 }{
		{renew: 100, want: 100},
		{renew: 50, want: 100},
		{renew: 0, want: 100},
		{renew: 200, want: 200},
	} {
		r := mustRenew(t, st, l, tc.renew)
		if r.LastTimestampMS != tc.want {
			t.Errorf("Renew(%d): last_timestamp_ms = %d, want %d", tc.renew, r.LastTimestampMS, tc.want)
		}
		if r.Token != l.Token || r.WorkerID != l.WorkerID || r.ExpiresAt.Before(prevExpiry) {
			t.Errorf("Renew(%d) = %+v, want token %q, worker %d, expiry not before %v",
				tc.renew, r, l.Token, l.WorkerID, prevExpiry)
		}
		prevExpiry = r.ExpiresAt
	}
}

func testRelease(t *testing.T, e env) {
	st := e.open(t)
	l := mustAcquire(t, st, acquireRequest("token-a", 0))
	mustRenew(t, st, l, 300)
	if err := st.Release(t.Context(), cluster, l.WorkerID, l.Token, 250); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := st.Renew(t.Context(), cluster, l.WorkerID, l.Token, time.Minute, 0); !errors.Is(err, workerlease.ErrNotAssigned) {
		t.Errorf("Renew after release: error = %v, want %v", err, workerlease.ErrNotAssigned)
	}
	if err := st.Release(t.Context(), cluster, l.WorkerID, l.Token, 0); !errors.Is(err, workerlease.ErrNotAssigned) {
		t.Errorf("Release after release: error = %v, want %v", err, workerlease.ErrNotAssigned)
	}
	next := mustAcquire(t, st, acquireRequest("token-b", 0))
	if next.WorkerID != l.WorkerID || next.LastTimestampMS != 300 {
		t.Errorf("Acquire after release = worker %d with last_timestamp_ms %d, want worker %d with 300",
			next.WorkerID, next.LastTimestampMS, l.WorkerID)
	}
	if err := st.Release(t.Context(), cluster, next.WorkerID, next.Token, 900); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := mustAcquire(t, st, acquireRequest("token-c", 0)).LastTimestampMS; got != 900 {
		t.Errorf("Acquire after release raised last_timestamp_ms: got %d, want 900", got)
	}
}

func testLeaseConflicts(t *testing.T, e env) {
	st := e.open(t)
	l := mustAcquire(t, st, acquireRequest("token-a", 0))
	for _, tc := range []struct {
		name     string
		cluster  string
		workerID int64
		token    string
		want     error
	}{
		{"never assigned", cluster, 5, "token-a", workerlease.ErrNotAssigned},
		{"other cluster", "other", l.WorkerID, "token-a", workerlease.ErrNotAssigned},
		{"wrong token", cluster, l.WorkerID, "token-b", workerlease.ErrTokenMismatch},
		{"token differing in case", cluster, l.WorkerID, "TOKEN-A", workerlease.ErrTokenMismatch},
	} {
		_, err := st.Renew(t.Context(), tc.cluster, tc.workerID, tc.token, time.Minute, 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Renew error = %v, want %v", tc.name, err, tc.want)
		}
		if err := st.Release(t.Context(), tc.cluster, tc.workerID, tc.token, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: Release error = %v, want %v", tc.name, err, tc.want)
		}
	}
	mustRenew(t, st, l, 0) // still held by token-a
}

// testAcquirePreference: IDs 0 and 1 are released with last_timestamp_ms
// ahead of and behind the caller's clock; ID 2 was never leased.
func testAcquirePreference(t *testing.T, e env) {
	const nowMS = 1_000_000
	st := e.open(t)
	var held []workerlease.Lease
	for i := range 2 {
		held = append(held, mustAcquire(t, st, acquireRequest(fmt.Sprintf("setup-%d", i), 1)))
	}
	for i, ts := range []int64{nowMS + 60_000, nowMS - 60_000} {
		if err := st.Release(t.Context(), cluster, held[i].WorkerID, held[i].Token, ts); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	for i, want := range []struct{ workerID, lastTimestampMS int64 }{
		{1, nowMS - 60_000}, // behind the clock, though 0 is lower
		{2, 0},              // never leased beats ahead of the clock
		{0, nowMS + 60_000}, // the last one left
	} {
		req := acquireRequest(fmt.Sprintf("token-%d", i), 2)
		req.NowMS = nowMS
		got := mustAcquire(t, st, req)
		if got.WorkerID != want.workerID || got.LastTimestampMS != want.lastTimestampMS {
			t.Errorf("Acquire %d = worker %d with last_timestamp_ms %d, want worker %d with %d",
				i, got.WorkerID, got.LastTimestampMS, want.workerID, want.lastTimestampMS)
		}
	}
}
