package segment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

func TestConcurrentNoDuplicates(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	a := alloctest.New(t, st, segment.Config{})
	alloctest.DrainConcurrently(t, []*segment.Allocator{a}, "t", 64, 5000)
}

func TestFirstIDsAreOneTwoThree(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100000})
	a := alloctest.New(t, st, segment.Config{})
	ids, err := alloctest.Drain(a, "t", 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(ids), "[1 2 3]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestCloseGivesBackAndRestartContinues(t *testing.T) {
	for _, step := range []int64{1, 7, 100000} {
		t.Run(fmt.Sprint("step ", step), func(t *testing.T) {
			st := newFakeStore(segment.Tag{AppTag: "t", Step: step})
			var last int64
			for round := 0; round < 3; round++ {
				a, err := segment.New(context.Background(), st, segment.Config{})
				if err != nil {
					t.Fatal(err)
				}
				ids, err := alloctest.Drain(a, "t", 25)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := ids[0], last+1; got != want {
					t.Fatalf("round %d: first ID got %d, want %d", round, got, want)
				}
				last = ids[len(ids)-1]
				if err := a.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got, want := st.maxID("t"), last; got != want {
					t.Fatalf("round %d: max_id after Close got %d, want %d", round, got, want)
				}
			}
		})
	}
}

func TestAbandonThenNewAllocatorIsAbove(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 50})
	old, err := segment.New(context.Background(), st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := alloctest.Drain(old, "t", 120)
	if err != nil {
		t.Fatal(err)
	}
	// old is never closed: a crash. Its prefetched segment is simply lost.
	fresh := alloctest.New(t, st, segment.Config{})
	next, err := alloctest.Drain(fresh, "t", 10)
	if err != nil {
		t.Fatal(err)
	}
	if next[0] <= ids[len(ids)-1] {
		t.Fatalf("after abandon got %d, want above %d", next[0], ids[len(ids)-1])
	}
}

func TestCloseGivesBackOnlyOwnSuffix(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	a := alloctest.New(t, st, segment.Config{})
	if _, err := alloctest.Drain(a, "t", 2); err != nil { // fetches (0,10] and prefetches (10,30]
		t.Fatal(err)
	}
	alloctest.WaitFor(t, func() bool { n, _ := a.Buffered("t"); return n == 28 })
	other := alloctest.New(t, st, segment.Config{})
	if _, err := alloctest.Drain(other, "t", 2); err != nil { // takes (30,40], prefetches (40,60]
		t.Fatal(err)
	}
	alloctest.WaitFor(t, func() bool { n, _ := other.Buffered("t"); return n == 28 })
	if err := other.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := st.maxID("t"), int64(32); got != want {
		t.Fatalf("after other's Close max_id got %d, want %d", got, want)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// a's unused IDs 3..30 lie below other's 31 and 32: giving them back
	// would let those be fetched again, so they are wasted and max_id stays.
	if got, want := st.maxID("t"), int64(32); got != want {
		t.Fatalf("after a's Close max_id got %d, want %d", got, want)
	}
}

func TestPrefetchKeepsStoreOffRequestPath(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 1000})
	a := alloctest.New(t, st, segment.Config{})
	if _, err := alloctest.Drain(a, "t", 101); err != nil { // 10% of the first segment
		t.Fatal(err)
	}
	alloctest.WaitFor(t, func() bool { n, _ := a.Buffered("t"); return n == 899+2000 })
	st.failing.Store(true)
	// Everything buffered is served with the store down.
	if _, err := alloctest.Drain(a, "t", 899+2000); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := a.Next(context.Background(), "t")
	if !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("with nothing buffered and the store down got %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("ErrUnavailable took %v, want at most the wait bound", took)
	}
	st.failing.Store(false)
	alloctest.WaitFor(t, func() bool { _, err := a.Next(context.Background(), "t"); return err == nil })
}

func TestAdaptiveStep(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100})
	a := alloctest.New(t, st, segment.Config{Now: clock.Now, MaxStep: 400})
	steps := []struct {
		lasted time.Duration
		want   int64
	}{
		{0, 100},                // first fetch: the row's step
		{time.Minute, 200},      // lasted under 15 min: double
		{time.Minute, 400},      // again, up to MaxStep
		{time.Minute, 400},      // capped
		{20 * time.Minute, 400}, // between 15 and 30 min: keep
		{31 * time.Minute, 200}, // over 30 min: halve
		{31 * time.Minute, 100},
		{31 * time.Minute, 100}, // never below the row's step
	}
	for i, s := range steps {
		clock.Add(s.lasted)
		before := st.fetches.Load()
		n, _ := a.Buffered("t")
		if n > 0 {
			if _, err := alloctest.Drain(a, "t", int(n)); err != nil {
				t.Fatal(err)
			}
		} else if _, err := a.Next(context.Background(), "t"); err != nil {
			t.Fatal(err)
		}
		// Wait for that fetch to be installed, not only started: a fetch
		// still in flight at the next round would end after its clock.Add
		// (so the next step sees a segment that lasted no time), and its
		// IDs would be missing from the next round's Buffered.
		alloctest.WaitFor(t, func() bool {
			n, _ := a.Buffered("t")
			return st.returned.Load() > before && alloctest.Step(a, "t") == s.want && n >= s.want-1
		})
		_ = i
	}
}
