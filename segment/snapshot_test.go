package segment_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// slowStore is a fakeStore whose fetches take exactly took by the fake
// clock, so a snapshot's LastFetchTook can be asserted to the nanosecond.
type slowStore struct {
	*fakeStore
	clock *testclock.Clock
	took  time.Duration
}

func (s *slowStore) Fetch(ctx context.Context, tag string, limit, step int64) (segment.Fetched, error) {
	s.clock.Add(s.took)
	return s.fakeStore.Fetch(ctx, tag, limit, step)
}

func snapshotOf(tb testing.TB, a *segment.Allocator, tag string) segment.TagSnapshot {
	tb.Helper()
	s, ok := a.Snapshot(tag)
	if !ok {
		tb.Fatalf("no snapshot of %q", tag)
	}
	return s
}

func TestSnapshotFollowsTheDoubleBuffer(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clock := testclock.New(start)
	fs := newFakeStore(segment.Tag{AppTag: "t", Step: 1000})
	a := alloctest.New(t, &slowStore{fakeStore: fs, clock: clock, took: 15 * time.Millisecond}, segment.Config{Now: clock.Now})

	before := segment.TagSnapshot{TagStats: segment.TagStats{AppTag: "t", Format: segment.FormatSequential}, RowStep: 1000}
	if got, want := snapshotOf(t, a, "t"), before; got != want {
		t.Fatalf("before the first fetch got %+v, want %+v", got, want)
	}

	if _, err := a.Next(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	got := snapshotOf(t, a, "t")
	want := segment.TagSnapshot{
		TagStats:    segment.TagStats{AppTag: "t", Format: segment.FormatSequential, Buffered: 999, Step: 1000, Issued: 1, Refills: 1},
		CurrentLeft: 999, CurrentSize: 1000, RowStep: 1000, MaxID: 1000,
		LastFetch: start.Add(15 * time.Millisecond), LastFetchTook: 15 * time.Millisecond,
	}
	if !got.LastFetch.Equal(want.LastFetch) {
		t.Errorf("LastFetch got %v, want %v", got.LastFetch, want.LastFetch)
	}
	got.LastFetch = want.LastFetch
	if got != want {
		t.Fatalf("after one ID got %+v, want %+v", got, want)
	}

	// The 101st ID passes 10% of the segment: the next one, at the doubled
	// step, is fetched in the background.
	if _, err := alloctest.Drain(a, "t", 100); err != nil {
		t.Fatal(err)
	}
	alloctest.WaitFor(t, func() bool { s := snapshotOf(t, a, "t"); return s.Prefetched > 0 && !s.Fetching })
	got = snapshotOf(t, a, "t")
	if got.CurrentLeft != 899 || got.Prefetched != 2000 || got.Buffered != 2899 || got.Step != 2000 ||
		got.RowStep != 1000 || got.MaxID != 3000 || got.Issued != 101 || got.Refills != 2 || got.Failing {
		t.Fatalf("with a prefetched segment got %+v, want 899 left of 1000, 2000 prefetched, step 2000, max_id 3000, 2 refills", got)
	}

	fs.failing.Store(true)
	if _, err := alloctest.Drain(a, "t", 899+2000); err != nil { // the buffer outlives the store
		t.Fatal(err)
	}
	alloctest.WaitFor(t, func() bool { return snapshotOf(t, a, "t").Failing })
	if got := snapshotOf(t, a, "t"); got.Buffered != 0 || got.CurrentLeft != 0 || got.CurrentSize != 2000 || got.MaxID != 3000 || got.Refills != 2 {
		t.Errorf("spent with the store down got %+v, want nothing left of the 2000-ID segment, max_id still 3000, no failed fetch a refill", got)
	}
}

// TestSnapshotOfOneTag: Snapshot reads one tag without allocating (a
// page of the monitor's, every second), and knows no tag the allocator
// does not serve.
func TestSnapshotOfOneTag(t *testing.T) {
	a := alloctest.New(t, newFakeStore(segment.Tag{AppTag: "a", Step: 100}, segment.Tag{AppTag: "b", Step: 10}), segment.Config{})
	if _, err := a.Next(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	if s := snapshotOf(t, a, "b"); s.AppTag != "b" || s.Issued != 1 || s.RowStep != 10 || s.CurrentSize != 10 {
		t.Errorf("b: %+v, want its one ID of a segment of 10", s)
	}
	if s := snapshotOf(t, a, "a"); s.AppTag != "a" || s.Issued != 0 || s.CurrentSize != 0 {
		t.Errorf("a: %+v, want no segment yet", s)
	}
	for _, tag := range []string{"ghost", "bad tag!", ""} {
		if got, ok := a.Snapshot(tag); ok {
			t.Errorf("Snapshot(%q) = %+v, true; want false", tag, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = a.Snapshot("b") }); n != 0 {
		t.Errorf("Snapshot: %v allocations, want 0", n)
	}
}

// TestSnapshotsUnderLoad reads snapshots while IDs are claimed: the parts
// always add up, and the race detector watches the reads.
func TestSnapshotsUnderLoad(t *testing.T) {
	a := alloctest.New(t, newFakeStore(segment.Tag{AppTag: "t", Step: 100}), segment.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			if _, err := alloctest.Drain(a, "t", 2000); err != nil {
				errs <- err
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		default:
		}
		s := snapshotOf(t, a, "t")
		if s.CurrentLeft < 0 || s.CurrentLeft > s.CurrentSize || s.CurrentLeft+s.Prefetched != s.Buffered {
			t.Fatalf("inconsistent snapshot %+v", s)
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
