package segment_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// wasteObserver records what the allocator reports.
type wasteObserver struct {
	mu        sync.Mutex
	wasted    map[segment.WasteReason]int64
	givenBack int64
	fetchErrs []error
}

func newWasteObserver() *wasteObserver {
	return &wasteObserver{wasted: map[segment.WasteReason]int64{}}
}

func (o *wasteObserver) Fetched(_ string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.fetchErrs = append(o.fetchErrs, err)
	}
}

func (o *wasteObserver) GaveBack(_ string, n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.givenBack += n
}

func (o *wasteObserver) Wasted(_ string, n int64, why segment.WasteReason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.wasted[why] += n
}

func (o *wasteObserver) snapshot() (map[segment.WasteReason]int64, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := make(map[segment.WasteReason]int64, len(o.wasted))
	for k, v := range o.wasted {
		m[k] = v
	}
	return m, o.givenBack
}

func statsOf(tb testing.TB, a *segment.Allocator, tag string) segment.TagStats {
	tb.Helper()
	for _, s := range a.Stats() {
		if s.AppTag == tag {
			return s
		}
	}
	tb.Fatalf("no stats for %q", tag)
	return segment.TagStats{}
}

// TestWasteCounted: every way reserved IDs go unissued is counted when it
// happens, by reason, in the Observer and the tag's Stats; IDs handed back
// are counted as given back.
func TestWasteCounted(t *testing.T) {
	ctx := context.Background()
	// prime takes two IDs of "t" (step 10, capped at 10): the second starts
	// the prefetch, so 1..10 is current (8 left) and 11..20 is prefetched.
	prime := func(t *testing.T, st *fakeStore, a *segment.Allocator) {
		t.Helper()
		if _, err := alloctest.Drain(a, "t", 2); err != nil {
			t.Fatal(err)
		}
		alloctest.WaitFor(t, func() bool { n, _ := a.Buffered("t"); return n == 18 })
		if st.fetches.Load() != 2 {
			t.Fatalf("fetches = %d, want 2", st.fetches.Load())
		}
	}
	tests := []struct {
		name string
		// run acts after prime and returns the allocator's Close error.
		run           func(t *testing.T, st *fakeStore, a *segment.Allocator) error
		wantWasted    map[segment.WasteReason]int64
		wantGivenBack int64
	}{
		{
			name: "graceful stop alone wastes none",
			run: func(t *testing.T, st *fakeStore, a *segment.Allocator) error {
				return a.Close(ctx)
			},
			wantWasted:    map[segment.WasteReason]int64{},
			wantGivenBack: 18,
		},
		{
			name: "a batch larger than what is buffered fails whole: wastes none",
			run: func(t *testing.T, st *fakeStore, a *segment.Allocator) error {
				st.failing.Store(true) // the fetch of the 12 it lacks fails
				err := a.NextN(ctx, "t", make([]int64, 30))
				if !errors.Is(err, segment.ErrUnavailable) {
					t.Errorf("NextN(30) with 18 buffered and the store down: got %v, want ErrUnavailable", err)
				}
				st.failing.Store(false)
				return a.Close(ctx)
			},
			wantWasted:    map[segment.WasteReason]int64{},
			wantGivenBack: 18,
		},
		{
			name: "give-back refused: another instance fetched after us",
			run: func(t *testing.T, st *fakeStore, a *segment.Allocator) error {
				if _, err := st.Fetch(ctx, "t", segment.MaxUsableID, 0); err != nil {
					t.Fatal(err)
				}
				return a.Close(ctx)
			},
			// 3..20 is contiguous; the row is at 30, not 20.
			wantWasted: map[segment.WasteReason]int64{segment.WasteGiveBackRefused: 18},
		},
		{
			name: "give-back failed",
			run: func(t *testing.T, st *fakeStore, a *segment.Allocator) error {
				st.failing.Store(true)
				if err := a.Close(ctx); err == nil {
					t.Error("Close with the store down: got nil, want the give-back's error")
				}
				return nil
			},
			wantWasted: map[segment.WasteReason]int64{segment.WasteGiveBackFailed: 18},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
			obs := newWasteObserver()
			a := alloctest.New(t, st, segment.Config{Observer: obs, MaxStep: 10, WaitTimeout: 100 * time.Millisecond})
			prime(t, st, a)
			if err := tt.run(t, st, a); err != nil {
				t.Fatalf("Close: %v", err)
			}
			checkWaste(t, a, obs, tt.wantWasted, tt.wantGivenBack)
		})
	}

	t.Run("interleaved: the current segment's rest lies below another instance's range", func(t *testing.T) {
		st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
		obs := newWasteObserver()
		a := alloctest.New(t, st, segment.Config{Observer: obs, MaxStep: 10})
		if _, err := a.Next(ctx, "t"); err != nil { // 1..10
			t.Fatal(err)
		}
		if _, err := st.Fetch(ctx, "t", segment.MaxUsableID, 0); err != nil { // another instance: 11..20
			t.Fatal(err)
		}
		if _, err := a.Next(ctx, "t"); err != nil { // prefetches 21..30
			t.Fatal(err)
		}
		alloctest.WaitFor(t, func() bool { n, _ := a.Buffered("t"); return n == 18 })
		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
		checkWaste(t, a, obs, map[segment.WasteReason]int64{segment.WasteInterleaved: 8}, 10)
	})
}

func checkWaste(t *testing.T, a *segment.Allocator, obs *wasteObserver, want map[segment.WasteReason]int64, wantBack int64) {
	t.Helper()
	wasted, back := obs.snapshot()
	var total int64
	for _, why := range segment.WasteReasons() {
		if wasted[why] != want[why] {
			t.Errorf("wasted %s = %d, want %d", why, wasted[why], want[why])
		}
		total += want[why]
	}
	if back != wantBack {
		t.Errorf("given back = %d, want %d", back, wantBack)
	}
	if st := statsOf(t, a, "t"); st.Wasted != total || st.GivenBack != wantBack {
		t.Errorf("Stats: wasted %d, given back %d; want %d, %d", st.Wasted, st.GivenBack, total, wantBack)
	}
}

// TestFetchTimedOut: a fetch that fails after its deadline is marked, since
// the store may have committed it; a fault before the deadline is not.
func TestFetchTimedOut(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	st.delay = time.Second
	obs := newWasteObserver()
	a := alloctest.New(t, st, segment.Config{Observer: obs, FetchTimeout: 20 * time.Millisecond, WaitTimeout: 200 * time.Millisecond})
	if _, err := a.Next(ctx, "t"); !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("Next with a store slower than FetchTimeout: got %v, want ErrUnavailable", err)
	}
	obs.mu.Lock()
	errs := obs.fetchErrs
	obs.mu.Unlock()
	if len(errs) == 0 || !errors.Is(errs[0], segment.ErrFetchTimedOut) || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("fetch errors %v, want ErrFetchTimedOut wrapping the store's error", errs)
	}

	st2 := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	obs2 := newWasteObserver()
	a2 := alloctest.New(t, st2, segment.Config{Observer: obs2, WaitTimeout: 50 * time.Millisecond})
	st2.failing.Store(true)
	_, _ = a2.Next(ctx, "t")
	alloctest.WaitFor(t, func() bool { obs2.mu.Lock(); defer obs2.mu.Unlock(); return len(obs2.fetchErrs) > 0 })
	obs2.mu.Lock()
	defer obs2.mu.Unlock()
	if err := obs2.fetchErrs[0]; errors.Is(err, segment.ErrFetchTimedOut) {
		t.Errorf("a fetch that failed at once is marked timed out: %v", err)
	}
}
