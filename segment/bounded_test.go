package segment_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// A batch larger than what a bounded tag has left is refused with nothing
// taken and nothing wasted, and the tag goes on serving what it has
// (docs/api.md §15). These tests hold it for a fixed_length tag of two
// digits (IDs 10..99), as issue 29 found it: one ID taken, then a batch of
// 100 spent the other 89 for good, across restarts.

// twoDigits creates the tag "f" of IDs 10..99 with step through a.
func twoDigits(tb testing.TB, a *segment.Allocator, step int64) {
	tb.Helper()
	n := segment.NewTag{AppTag: "f", Step: step, Format: segment.FormatFixedLength, Length: 2}
	if _, err := a.CreateTag(context.Background(), n); err != nil {
		tb.Fatal(err)
	}
}

// wantTooLarge fails tb unless err refuses a batch as larger than the left
// IDs the tag has here, as a bad_request naming count whose words say so.
func wantTooLarge(tb testing.TB, what string, err error, left int64) {
	tb.Helper()
	tl, ok := errors.AsType[*segment.TooLargeError](err)
	if !ok || !errors.Is(err, segment.ErrBatchTooLarge) || tl.Left != left {
		tb.Fatalf("%s: got %v, want a *TooLargeError with %d left", what, err, left)
	}
	e, _ := errs.Describe(err)
	if e.Kind != errs.BadRequest || e.Field != "count" || !strings.Contains(e.Error(), "at most "+strconv.FormatInt(left, 10)+":") {
		tb.Fatalf("%s: kind %s, field %q, words %q; want bad_request naming count, saying at most %d", what, e.Kind, e.Field, e.Error(), left)
	}
}

// drainAll takes single IDs of tag until a says the tag is spent.
func drainAll(tb testing.TB, a *segment.Allocator, tag string) []int64 {
	tb.Helper()
	var ids []int64
	for {
		id, err := a.Next(context.Background(), tag)
		if errors.Is(err, segment.ErrExhausted) {
			return ids
		}
		if err != nil {
			tb.Fatalf("Next after %d IDs: %v", len(ids), err)
		}
		ids = append(ids, id)
	}
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// TestBoundedBatchRefusedWhole: with one ID taken of 10..99, a batch of
// 100 (a list, or 1,000 as ranges) is refused naming the 89 left, nothing
// is wasted, the store's max_id never passes 99, and single IDs then get
// all 89; at the end every call is exhausted. With step 10 the batch's
// fetch finds the end; with step 1000 the first fetch did.
func TestBoundedBatchRefusedWhole(t *testing.T) {
	ctx := context.Background()
	batches := map[string]func(a *segment.Allocator, n int64) error{
		"list": func(a *segment.Allocator, n int64) error { return a.NextN(ctx, "f", make([]int64, n)) },
		"ranges": func(a *segment.Allocator, n int64) error {
			_, err := a.NextRanges(ctx, "f", n, nil)
			return err
		},
	}
	for _, step := range []int64{10, 1000} {
		for name, batch := range batches {
			t.Run(name+"/step "+strconv.FormatInt(step, 10), func(t *testing.T) {
				st := newFakeStore()
				obs := newWasteObserver()
				a := alloctest.New(t, st, segment.Config{Observer: obs})
				twoDigits(t, a, step)
				if id, err := a.Next(ctx, "f"); err != nil || id != 10 {
					t.Fatalf("first ID = %d, %v; want 10", id, err)
				}
				for _, n := range []int64{100, 1000, 90} {
					wantTooLarge(t, "a batch of "+strconv.FormatInt(n, 10), batch(a, n), 89)
				}
				if got := st.maxID("f"); got > 99 {
					t.Errorf("max_id = %d, past the format's last number 99", got)
				}
				if ids := drainAll(t, a, "f"); !slices.Equal(ids, seq(11, 99)) {
					t.Fatalf("single IDs after the refusals: %v, want 11..99", ids)
				}
				for _, n := range []int64{1, 100} {
					if err := batch(a, n); !errors.Is(err, segment.ErrExhausted) {
						t.Errorf("a batch of %d on the spent tag: %v, want ErrExhausted", n, err)
					}
				}
				if wasted, _ := obs.snapshot(); len(wasted) != 0 || statsOf(t, a, "f").Wasted != 0 {
					t.Errorf("wasted %v, want none", wasted)
				}
				if got := st.maxID("f"); got != 99 {
					t.Errorf("max_id = %d, want 99", got)
				}
			})
		}
	}
}

// TestBoundedBatchAcrossRestarts: the refusal holds after graceful
// restarts, each of which gives the unused IDs back, and the 89 IDs are
// issued once in all; a restart on the spent tag moves max_id no further.
func TestBoundedBatchAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{})
	twoDigits(t, a, 10)
	issued, _ := alloctest.Drain(a, "f", 1)
	wantTooLarge(t, "a batch of 100", a.NextN(ctx, "f", make([]int64, 100)), 89)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	b := alloctest.New(t, st, segment.Config{})
	wantTooLarge(t, "a batch of 100 after a restart", b.NextN(ctx, "f", make([]int64, 100)), 89)
	forty := make([]int64, 40)
	if err := b.NextN(ctx, "f", forty); err != nil {
		t.Fatal(err)
	}
	issued = append(issued, forty...)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}

	c := alloctest.New(t, st, segment.Config{})
	if _, err := c.NextRanges(ctx, "f", 1000, nil); err == nil {
		t.Fatal("1,000 as ranges with 49 left: got no error")
	} else {
		wantTooLarge(t, "1,000 as ranges after a second restart", err, 49)
	}
	issued = append(issued, drainAll(t, c, "f")...)
	if !slices.Equal(issued, seq(10, 99)) {
		t.Fatalf("IDs across the restarts: %v, want 10..99 once each", issued)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d := alloctest.New(t, st, segment.Config{})
	if _, err := d.Next(ctx, "f"); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("Next after the last restart = %v, want ErrExhausted", err)
	}
	if got := st.maxID("f"); got != 99 {
		t.Errorf("max_id after restarts on the spent tag = %d, want 99", got)
	}
}

// TestBoundedBatchSeveralInstances: two instances share the tag. A batch
// larger than what one can get is refused there with what it holds; a
// fetch that finds the store at the limit neither moves max_id nor marks
// numbers spent that another instance gives back; every ID of 10..99 is
// issued once, and none is wasted.
func TestBoundedBatchSeveralInstances(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	obs := newWasteObserver()
	a := alloctest.New(t, st, segment.Config{Observer: obs})
	twoDigits(t, a, 10)
	b := alloctest.New(t, st, segment.Config{Observer: obs})
	issued, _ := alloctest.Drain(a, "f", 2) // 10, 11; a holds 12..19 and prefetches 20..39
	alloctest.WaitFor(t, func() bool { n, _ := a.Buffered("f"); return n == 28 })
	more, _ := alloctest.Drain(b, "f", 2) // 40, 41; b holds 42..49 and prefetches 50..69
	issued = append(issued, more...)
	alloctest.WaitFor(t, func() bool { n, _ := b.Buffered("f"); return n == 28 })

	// a's batch fetches what it lacks, which stops at 99: 28 + 30 left.
	wantTooLarge(t, "a batch of 100 on a", a.NextN(ctx, "f", make([]int64, 100)), 58)
	// b's finds the store at 99: it has its 28.
	wantTooLarge(t, "a batch of 100 on b", b.NextN(ctx, "f", make([]int64, 100)), 28)
	if got := st.maxID("f"); got != 99 {
		t.Fatalf("max_id = %d, want 99", got)
	}

	// a issues up to 75, then stops: 76..99 go back to the store.
	for {
		id, err := a.Next(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		issued = append(issued, id)
		if id == 75 {
			break
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c := alloctest.New(t, st, segment.Config{Observer: obs})
	issued = append(issued, drainAll(t, c, "f")...)
	issued = append(issued, drainAll(t, b, "f")...)
	slices.Sort(issued)
	if !slices.Equal(issued, seq(10, 99)) {
		t.Fatalf("IDs of the three instances: %v, want 10..99 once each", issued)
	}
	if wasted, back := obs.snapshot(); len(wasted) != 0 || back != 24 {
		t.Errorf("wasted %v, given back %d; want none wasted, 24 given back", wasted, back)
	}
}

// TestDatedBatchLargerThanPeriodLeft: a dated tag's period is bounded
// too: a batch larger than what the period has left is refused with the
// number left and when the next period begins; single IDs and a batch
// that fits still get the period's numbers, and then the period is
// exhausted.
func TestDatedBatchLargerThanPeriodLeft(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(utc(2026, 11, 26, 10, 0, 30, 0))
	obs := newWasteObserver()
	a, st := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 10, Length: 2, Period: dated.Minute},
		segment.Config{Observer: obs})
	if id, err := a.Next(ctx, "d"); err != nil || id != 20261126100001 {
		t.Fatalf("first ID = %d, %v; want 20261126100001", id, err)
	}
	err := a.NextN(ctx, "d", make([]int64, 99))
	wantTooLarge(t, "a batch of 99 with 98 left in the period", err, 98)
	if !strings.Contains(err.Error(), "the next period begins in 30s") {
		t.Errorf("words %q do not say when the next period begins", err)
	}
	if got, _ := st.counter("d", 202611261000); got != 99 {
		t.Errorf("the period's counter = %d, want 99", got)
	}
	ids := make([]int64, 97)
	if err := a.NextN(ctx, "d", ids); err != nil || ids[0] != 20261126100002 || ids[96] != 20261126100098 {
		t.Fatalf("a batch of 97 = %d..%d, %v; want 02..98", ids[0], ids[96], err)
	}
	if id, err := a.Next(ctx, "d"); err != nil || id != 20261126100099 {
		t.Fatalf("last ID = %d, %v; want 20261126100099", id, err)
	}
	if err := a.NextN(ctx, "d", ids[:2]); !errors.Is(err, dated.ErrPeriodExhausted) {
		t.Errorf("a batch on the spent period: %v, want ErrPeriodExhausted", err)
	}
	if wasted, _ := obs.snapshot(); len(wasted) != 0 {
		t.Errorf("wasted %v, want none", wasted)
	}
}
