package segment_test

import (
	"context"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// TestDatedFirstIDAfterBoundaryFromMemory: the next period's first range
// is fetched within the lead before the boundary, by a claim in it or, on
// a tag without one, by the timer armed when the period began; then,
// with every fetch held by the store until it times out, the first ID
// after the boundary is still served at once, and no fetch starts for it.
func TestDatedFirstIDAfterBoundaryFromMemory(t *testing.T) {
	const (
		this = 202611261000
		next = 202611261001
	)
	end := utc(2026, 11, 26, 10, 1, 0, 0)
	tests := []struct {
		name string
		// claims are the instants of the claims before the boundary.
		claims []time.Time
	}{
		{"a claim within the lead fetches it", []time.Time{end.Add(-30 * time.Second), end.Add(-500 * time.Millisecond)}},
		{"the timer fetches it", []time.Time{end.Add(-1100 * time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clock := testclock.New(tt.claims[0])
			obs := newWasteObserver()
			a, st := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 10, Period: dated.Minute},
				segment.Config{MaxStep: 10, WaitTimeout: 50 * time.Millisecond, FetchTimeout: time.Second, Observer: obs})
			for _, at := range tt.claims {
				clock.Set(at)
				if _, err := a.Next(ctx, "d"); err != nil {
					t.Fatalf("Next at %v: %v", at, err)
				}
			}
			waitUntil(t, "the next period's range", func() bool {
				n, ok := st.counter("d", next)
				return ok && n == 10 && snapshotOf(t, a, "d").Period.NextPrefetched == 10
			})
			// Let any prefetch of this period's own end too, then hold every
			// fetch: one on the request path would fail the request.
			waitUntil(t, "the fetches to end", func() bool { return !snapshotOf(t, a, "d").Fetching })
			st.blocked.Store(true)
			fetches := st.periodFetches.Load()

			clock.Set(end)
			id, err := a.Next(ctx, "d")
			if err != nil || id != next*1_000_000+1 {
				t.Fatalf("first Next after the boundary = %d, %v; want %d from memory", id, err, int64(next*1_000_000+1))
			}
			if got := st.periodFetches.Load() - fetches; got != 0 {
				t.Errorf("%d fetches started by the first ID after the boundary, want 0", got)
			}
			snap := snapshotOf(t, a, "d")
			if snap.Period.Stamp != next || snap.Period.Issued != 1 || snap.Period.NextPrefetched != 0 {
				t.Errorf("snapshot after the boundary: %+v, want period %d with 1 issued", snap.Period, int64(next))
			}
			wasted, _ := obs.snapshot()
			issued := int64(len(tt.claims))
			if got := wasted[segment.WastePeriodEnded]; got < 10-issued {
				t.Errorf("period_ended waste %d, want at least %d (the rest of period %d's first range)", got, 10-issued, int64(this))
			}
		})
	}
}

// TestDatedPeriodEndedWaste: the unclaimed rest of a period that ended
// (its current range and the one prefetched) is counted as wasted,
// period_ended, and never given back, at the turn and at Close; the
// current period's rest is given back on Close, and so is the next
// period's range fetched ahead.
func TestDatedPeriodEndedWaste(t *testing.T) {
	ctx := context.Background()
	// MaxStep 10: the adaptive step stays 10, so the ranges are known.
	tag := segment.NewTag{AppTag: "d", Step: 10, Period: dated.Minute}

	t.Run("at the turn and at Close", func(t *testing.T) {
		clock := testclock.New(utc(2026, 11, 26, 10, 0, 10, 0))
		obs := newWasteObserver()
		a, st := newDatedAllocator(t, clock, tag, segment.Config{MaxStep: 10, Observer: obs})
		for range 2 { // the second claim is the prefetch point of 1..10
			if _, err := a.Next(ctx, "d"); err != nil {
				t.Fatal(err)
			}
		}
		waitUntil(t, "the prefetch", func() bool { n, _ := st.counter("d", 202611261000); return n == 20 })
		clock.Set(utc(2026, 11, 26, 10, 5, 0, 0))
		if id, err := a.Next(ctx, "d"); err != nil || id != 202611261005_000001 {
			t.Fatalf("Next in a later period = %d, %v", id, err)
		}
		wasted, _ := obs.snapshot()
		if got := wasted[segment.WastePeriodEnded]; got != 18 {
			t.Errorf("period_ended waste after the turn = %d, want 18 (3..10 and 11..20)", got)
		}
		if st := statsOf(t, a, "d"); st.Wasted != 18 || st.Issued != 3 || st.Period.Stamp != 202611261005 {
			t.Errorf("stats %+v, want 18 wasted, 3 issued, period 202611261005", st)
		}

		clock.Set(utc(2026, 11, 26, 10, 6, 30, 0)) // 10:05 is over, unserved since
		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if n := st.giveBacks.Load(); n != 0 {
			t.Errorf("%d give-backs of an ended period, want 0", n)
		}
		if n, _ := st.counter("d", 202611261005); n != 10 {
			t.Errorf("counter of the ended period = %d, want 10 (not given back)", n)
		}
		wasted, back := obs.snapshot()
		if got := wasted[segment.WastePeriodEnded]; got != 27 || back != 0 {
			t.Errorf("after Close: period_ended %d, given back %d; want 27, 0", got, back)
		}
	})

	t.Run("Close gives back the current and the next period", func(t *testing.T) {
		clock := testclock.New(utc(2026, 11, 26, 10, 0, 59, 500))
		obs := newWasteObserver()
		a, st := newDatedAllocator(t, clock, tag, segment.Config{MaxStep: 10, Observer: obs})
		if _, err := a.Next(ctx, "d"); err != nil { // within the lead: the next period is fetched
			t.Fatal(err)
		}
		waitUntil(t, "the next period's range", func() bool { n, _ := st.counter("d", 202611261001); return n == 10 })
		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cur, _ := st.counter("d", 202611261000)
		nxt, _ := st.counter("d", 202611261001)
		wasted, back := obs.snapshot()
		if cur != 1 || nxt != 0 || back != 19 || len(wasted) != 0 {
			t.Errorf("after Close: counters %d and %d, given back %d, wasted %v; want 1 and 0, 19, none", cur, nxt, back, wasted)
		}
	})
}

// TestDatedSnapshot: what GET /tags and the monitor show of a dated tag:
// the current period, how many of it this instance issued, the store's
// counter as this instance last saw it (another instance's later fetch is
// not in it), and what is left of it.
func TestDatedSnapshot(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(utc(2026, 11, 26, 10, 0, 10, 0))
	a, st := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 10, Length: 2, Period: dated.Hour}, segment.Config{MaxStep: 10})
	before := snapshotOf(t, a, "d")
	if before.Format != segment.FormatDated || before.Length != 2 || before.Period != (segment.PeriodStats{}) {
		t.Errorf("snapshot before the first ID: %+v", before)
	}
	for range 3 {
		if _, err := a.Next(ctx, "d"); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the prefetch", func() bool { return snapshotOf(t, a, "d").Prefetched == 10 })
	b := alloctest.New(t, st, segment.Config{Now: clock.Now})
	if _, err := b.Next(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	snap := snapshotOf(t, a, "d")
	want := segment.PeriodStats{Stamp: 2026112610, Start: utc(2026, 11, 26, 10, 0, 0, 0), End: utc(2026, 11, 26, 11, 0, 0, 0),
		Issued: 3, Counter: 20, Left: 17 + 99 - 20}
	if got := snap.Period; got.Stamp != want.Stamp || !got.Start.Equal(want.Start) || !got.End.Equal(want.End) ||
		got.Issued != want.Issued || got.Counter != want.Counter || got.Left != want.Left || got.NextPrefetched != 0 {
		t.Errorf("Period = %+v, want %+v", got, want)
	}
	if snap.Issued != 3 || snap.Buffered != 17 || snap.CurrentLeft != 7 || snap.Prefetched != 10 || snap.MaxID != 20 || snap.RowStep != 10 ||
		snap.Refills != 2 {
		t.Errorf("snapshot %+v, want 3 issued, 17 buffered (7 + 10), max_id 20, row step 10, 2 refills", snap)
	}
	if got := statsOf(t, a, "d").Period; got.Counter != 20 || got.Issued != 3 {
		t.Errorf("Stats' period %+v, want the snapshot's", got)
	}
	if bs := snapshotOf(t, b, "d").Period; bs.Counter != 30 || bs.Issued != 1 {
		t.Errorf("b's period %+v, want counter 30, 1 issued", bs)
	}

	// The next period's buffer is new; the tag's refills go on from the
	// last period's.
	clock.Set(utc(2026, 11, 26, 11, 0, 0, 0))
	if _, err := a.Next(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOf(t, a, "d"); got.Period.Stamp != 2026112611 || got.Refills < 3 {
		t.Errorf("in the next period: stamp %d, %d refills; want 2026112611, at least 3 (2 of the period before)", got.Period.Stamp, got.Refills)
	}
}
