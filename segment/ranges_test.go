package segment_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// checkRanges fails unless rs are strictly increasing, disjoint, not
// adjacent (adjacent runs are joined) and hold n IDs in all.
func checkRanges(t *testing.T, rs []segment.Range, n int64) {
	t.Helper()
	var got int64
	for i, r := range rs {
		if r.First > r.Last {
			t.Fatalf("range %d: %v is empty", i, r)
		}
		if i > 0 && r.First <= rs[i-1].Last+1 {
			t.Fatalf("range %d: %v does not start above %v with a gap (overlapping, or adjacent and not joined)", i, r, rs[i-1])
		}
		got += r.Len()
	}
	if got != n {
		t.Fatalf("ranges %v hold %d IDs, want %d", rs, got, n)
	}
}

// TestRangesFollowTheSequence: ranges, runs and single IDs of one tag on
// one instance, of every size from one ID to many segments, take the
// tag's numbers in order, each once, with no gap.
func TestRangesFollowTheSequence(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	a := alloctest.New(t, st, segment.Config{MaxStep: 10})
	ctx := context.Background()
	next := int64(1) // the number the next call must start at
	take := func(what string, first, last int64) {
		t.Helper()
		if first != next {
			t.Fatalf("%s starts at %d, want %d", what, first, next)
		}
		next = last + 1
	}
	for _, step := range []struct {
		ranges int64 // a NextRanges of this count, or
		run    int64 // a NextRun of at most this, or a Next
	}{
		{ranges: 1}, {ranges: 5}, {run: 100}, {ranges: 25}, {}, {ranges: 10},
		{run: 3}, {ranges: 95}, {}, {run: 1}, {ranges: 7},
	} {
		switch {
		case step.ranges > 0:
			rs, err := a.NextRanges(ctx, "t", step.ranges, nil)
			if err != nil {
				t.Fatalf("NextRanges(%d): %v", step.ranges, err)
			}
			checkRanges(t, rs, step.ranges)
			if len(rs) != 1 {
				t.Fatalf("NextRanges(%d) on one instance: %v, want one joined range", step.ranges, rs)
			}
			take("NextRanges", rs[0].First, rs[0].Last)
		case step.run > 0:
			r, err := a.NextRun(ctx, "t", step.run)
			if err != nil {
				t.Fatalf("NextRun(%d): %v", step.run, err)
			}
			if r.Len() < 1 || r.Len() > step.run {
				t.Fatalf("NextRun(%d) = %v", step.run, r)
			}
			take("NextRun", r.First, r.Last)
		default:
			id, err := a.Next(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			take("Next", id, id)
		}
	}
}

// TestRangesAppendToDst: NextRanges appends, and on error leaves dst as
// it was.
func TestRangesAppendToDst(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	a := alloctest.New(t, st, segment.Config{MaxStep: 10})
	ctx := context.Background()
	dst := []segment.Range{{First: -5, Last: -3}}
	rs, err := a.NextRanges(ctx, "t", 4, dst)
	if err != nil || !slices.Equal(rs, []segment.Range{{First: -5, Last: -3}, {First: 1, Last: 4}}) {
		t.Fatalf("NextRanges onto dst: %v, %v", rs, err)
	}
	st.failing.Store(true)
	rs, err = a.NextRanges(ctx, "t", 50, dst)
	if !errors.Is(err, segment.ErrUnavailable) || len(rs) != 1 {
		t.Fatalf("NextRanges with the store down: %v, %v; want dst unchanged and ErrUnavailable", rs, err)
	}
}

// TestRangesRefusedClaimNothing: a tag whose IDs are not consecutive
// numbers, and a run of no IDs, are refused before anything is claimed.
func TestRangesRefusedClaimNothing(t *testing.T) {
	clock := testclock.New(utc(2026, 11, 26, 10, 0, 0, 0))
	a, _ := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 10, Period: dated.Day}, segment.Config{})
	ctx := context.Background()
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "scr", Step: 10, Format: segment.FormatScrambled, Length: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "seq", Step: 10}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"scrambled ranges", func() error { _, err := a.NextRanges(ctx, "scr", 5, nil); return err }, segment.ErrNotConsecutive},
		{"scrambled run", func() error { _, err := a.NextRun(ctx, "scr", 5); return err }, segment.ErrNotConsecutive},
		{"dated ranges", func() error { _, err := a.NextRanges(ctx, "d", 5, nil); return err }, segment.ErrNotConsecutive},
		{"dated run", func() error { _, err := a.NextRun(ctx, "d", 5); return err }, segment.ErrNotConsecutive},
		{"run of none", func() error { _, err := a.NextRun(ctx, "seq", 0); return err }, segment.ErrInvalidCount},
		{"unknown tag", func() error { _, err := a.NextRanges(ctx, "nope", 5, nil); return err }, segment.ErrUnknownTag},
	} {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if id, err := a.Next(ctx, "seq"); err != nil || id != 1 {
		t.Fatalf("seq's first ID after the refusals: %d, %v; want 1", id, err)
	}
	for _, tag := range []string{"scr", "d"} {
		if got := a.Stats(); slices.ContainsFunc(got, func(s segment.TagStats) bool { return s.AppTag == tag && s.Issued > 0 }) {
			t.Fatalf("%s: IDs issued by refused calls: %+v", tag, got)
		}
	}
	if err := segment.NewRangeLimit(0).Check(segment.DefaultMaxRange + 1); !errors.Is(err, segment.ErrInvalidCount) {
		t.Fatalf("a count over max_range: %v", err)
	}
}

// TestRangesUniqueUnderContention: ranges, runs, batches and single IDs
// from many goroutines never share an ID.
func TestRangesUniqueUnderContention(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100})
	a := alloctest.New(t, st, segment.Config{MaxStep: 1000})
	ctx := context.Background()
	var mu sync.Mutex
	seen := make(map[int64]bool)
	keep := func(first, last int64) {
		mu.Lock()
		defer mu.Unlock()
		for id := first; id <= last; id++ {
			if seen[id] {
				t.Errorf("ID %d issued twice", id)
			}
			seen[id] = true
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var rs []segment.Range
			ids := make([]int64, 7)
			for i := range 300 {
				var err error
				switch (g + i) % 4 {
				case 0:
					if rs, err = a.NextRanges(ctx, "t", int64(1+i%250), rs[:0]); err == nil {
						for _, r := range rs {
							keep(r.First, r.Last)
						}
					}
				case 1:
					var r segment.Range
					if r, err = a.NextRun(ctx, "t", int64(1+i%40)); err == nil {
						keep(r.First, r.Last)
					}
				case 2:
					if err = a.NextN(ctx, "t", ids); err == nil {
						for _, id := range ids {
							keep(id, id)
						}
					}
				default:
					var id int64
					if id, err = a.Next(ctx, "t"); err == nil {
						keep(id, id)
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
