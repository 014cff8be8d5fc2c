// Package advancetest is the suite every lease store's AdvanceLeases
// passes (SQL, Redis, etcd), run by each store's own tests:
//
//	advancetest.Leases(t, func(tb testing.TB) advancetest.Store { … })
//
// It proves what idalloc advance rests on: every worker ID of every
// cluster is raised to the floor, none is ever lowered, a live lease stays
// held, the next holder starts after the floor, a dry run writes nothing,
// and raises racing a holder's renewals lose neither's value.
package advancetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// Store is a lease store with AdvanceLeases (advance.Leases, here so that
// the lease adapters' tests need not import migrate).
type Store interface {
	workerlease.Store
	AdvanceLeases(ctx context.Context, toMS int64, dryRun bool, each func(cluster string, workerID, fromMS, toMS int64)) error
}

// Fresh returns a handle on a fresh, empty namespace, closed and removed
// at tb's cleanup; it skips tb when the store cannot run here.
type Fresh func(tb testing.TB) Store

// Leases runs the suite, each case on a namespace of its own.
func Leases(t *testing.T, fresh Fresh) {
	for _, c := range []struct {
		name string
		test func(t *testing.T, st Store)
	}{
		{"raises every worker ID of every cluster and never lowers one", testRaises},
		{"a dry run writes nothing", testDryRun},
		{"raises racing renewals lose no value", testRace},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, fresh(t)) })
	}
}

// seen is one call of AdvanceLeases's each.
type seen struct {
	cluster      string
	workerID     int64
	fromMS, toMS int64
}

func (s seen) String() string {
	return fmt.Sprintf("%s/%d: %d → %d", s.cluster, s.workerID, s.fromMS, s.toMS)
}

// advance calls AdvanceLeases and returns what it reported.
func advance(tb testing.TB, st Store, toMS int64, dryRun bool) []seen {
	tb.Helper()
	var got []seen
	err := st.AdvanceLeases(tb.Context(), toMS, dryRun, func(cluster string, workerID, fromMS, toMS int64) {
		got = append(got, seen{cluster: cluster, workerID: workerID, fromMS: fromMS, toMS: toMS})
	})
	if err != nil {
		tb.Fatalf("AdvanceLeases(%d, dry run %v): %v", toMS, dryRun, err)
	}
	return got
}

// acquire grants a worker ID up to maxWorkerID of cluster to token.
func acquire(tb testing.TB, st Store, cluster, token string, maxWorkerID int64) workerlease.Lease {
	tb.Helper()
	l, err := st.Acquire(tb.Context(), workerlease.AcquireRequest{
		Cluster: cluster, MaxWorkerID: maxWorkerID, Token: token, Holder: "advancetest",
		TTL: time.Minute, NowMS: time.Now().UnixMilli(),
	})
	if err != nil {
		tb.Fatalf("Acquire(%s, %s): %v", cluster, token, err)
	}
	return l
}

// sameSeen fails tb unless got is want, in order.
func sameSeen(tb testing.TB, what string, got, want []seen) {
	tb.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		tb.Errorf("%s reported\n  %v\nwant\n  %v", what, got, want)
	}
}

// testRaises: cluster a has a held ID, a released one with a timestamp
// past the floor and a released one below it; cluster b one held ID. The
// floor reaches every one of them but the one past it.
func testRaises(t *testing.T, st Store) {
	ctx := t.Context()
	now := time.Now().UnixMilli()
	floor := now + time.Hour.Milliseconds()
	held := acquire(t, st, "a", "token-held", 15)
	high := acquire(t, st, "a", "token-high", 15)
	low := acquire(t, st, "a", "token-low", 15)
	other := acquire(t, st, "b", "token-other", 15)
	if err := st.Release(ctx, "a", high.WorkerID, "token-high", floor+5000); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := st.Release(ctx, "a", low.WorkerID, "token-low", now); err != nil {
		t.Fatalf("Release: %v", err)
	}

	got := advance(t, st, floor, false)
	want := []seen{
		{cluster: "a", workerID: held.WorkerID, fromMS: 0, toMS: floor},
		{cluster: "a", workerID: high.WorkerID, fromMS: floor + 5000, toMS: floor + 5000},
		{cluster: "a", workerID: low.WorkerID, fromMS: now, toMS: floor},
		{cluster: "b", workerID: other.WorkerID, fromMS: 0, toMS: floor},
	}
	slices.SortFunc(want, func(x, y seen) int {
		return cmp.Or(strings.Compare(x.cluster, y.cluster), cmp.Compare(x.workerID, y.workerID))
	})
	sameSeen(t, "AdvanceLeases", got, want)

	// A lower floor lowers nothing.
	got = advance(t, st, now, false)
	for i := range want {
		want[i].fromMS = want[i].toMS
	}
	sameSeen(t, "AdvanceLeases with a lower floor", got, want)

	// The live lease is still held, now with the floor as its history.
	l, err := st.Renew(ctx, "a", held.WorkerID, "token-held", time.Minute, now)
	if err != nil {
		t.Fatalf("Renew of the held lease after the advance: %v", err)
	}
	if l.LastTimestampMS < floor {
		t.Errorf("renewed lease's last_timestamp_ms = %d, want at least the floor %d", l.LastTimestampMS, floor)
	}
	// The next holder of a released ID starts after the floor: with the
	// range cut to the three IDs, one of the released two is all it gets.
	next := acquire(t, st, "a", "token-next", max(held.WorkerID, high.WorkerID, low.WorkerID))
	if next.LastTimestampMS < floor {
		t.Errorf("next holder of worker %d starts after %d, want at least the floor %d", next.WorkerID, next.LastTimestampMS, floor)
	}
}

// testDryRun: a dry run reports the raise and makes none.
func testDryRun(t *testing.T, st Store) {
	l := acquire(t, st, "a", "token-dry", 15)
	floor := time.Now().Add(time.Hour).UnixMilli()
	want := []seen{{cluster: "a", workerID: l.WorkerID, fromMS: 0, toMS: floor}}
	sameSeen(t, "dry run", advance(t, st, floor, true), want)
	sameSeen(t, "a second dry run", advance(t, st, floor, true), want)
}

// testRace: a holder renews with a rising last timestamp while advances
// raise the same worker ID; what the store ends with is at least both, and
// no read ever sees it go down.
func testRace(t *testing.T, st Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l := acquire(t, st, "a", "token-race", 15)
	base := time.Now().UnixMilli()
	const rounds = 30
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds+2) // no send blocks
	var lastRenewed int64
	wg.Go(func() {
		for i := range int64(rounds) {
			ts := base + i*1000
			if _, err := st.Renew(ctx, "a", l.WorkerID, "token-race", time.Minute, ts); err != nil {
				errs <- fmt.Errorf("Renew(%d): %w", ts, err)
				return
			}
			lastRenewed = ts
		}
	})
	var floors []int64
	wg.Go(func() {
		prev := int64(0)
		for i := range int64(rounds) {
			floor := base + i*1000 + 500
			err := st.AdvanceLeases(ctx, floor, false, func(_ string, _ int64, fromMS, toMS int64) {
				if fromMS < prev || toMS < fromMS || toMS < floor {
					errs <- fmt.Errorf("advance to %d: %d → %d after %d", floor, fromMS, toMS, prev)
				}
				prev = toMS
			})
			if err != nil {
				errs <- fmt.Errorf("AdvanceLeases(%d): %w", floor, err)
				return
			}
			floors = append(floors, floor)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := advance(t, st, 0, true)
	if len(got) != 1 || len(floors) == 0 {
		t.Fatalf("after the race: %v (floors %v)", got, floors)
	}
	if want := max(lastRenewed, floors[len(floors)-1]); got[0].fromMS < want {
		t.Errorf("after the race last_timestamp_ms = %d, want at least %d (last renewed %d, last floor %d)",
			got[0].fromMS, want, lastRenewed, floors[len(floors)-1])
	}
}
