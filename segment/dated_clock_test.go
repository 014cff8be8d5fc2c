package segment_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// TestDatedClockSkew: an instance whose clock is off the store's by more
// than MaxClockSkew, as the first fetch measures it, refuses dated tags
// (kind unavailable, in words naming the skew and the bound) while a
// sequential tag on the same allocator serves as ever; once the store's
// clock agrees again, which the periodic check finds with no fetch under
// way, it serves them again. Within the bound nothing is refused.
func TestDatedClockSkew(t *testing.T) {
	tests := []struct {
		name   string
		offset time.Duration // the store's clock less the instance's
		words  string        // "" when served
	}{
		{"instance 5s behind", 5 * time.Second, "this instance's clock is 5s behind the store's, more than dated.max_clock_skew (1s)"},
		{"instance 5s ahead", -5 * time.Second, "this instance's clock is 5s ahead of the store's, more than dated.max_clock_skew (1s)"},
		{"within the bound", 900 * time.Millisecond, ""},
		{"within the bound, ahead", -time.Second, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clock := testclock.New(utc(2026, 11, 26, 10, 0, 0, 0))
			a, st := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 10},
				segment.Config{TagRefresh: 20 * time.Millisecond})
			if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "s", Step: 10}); err != nil {
				t.Fatal(err)
			}
			st.offset.Store(int64(tt.offset))
			_, err := a.Next(ctx, "d")
			if tt.words == "" {
				if err != nil {
					t.Fatalf("Next within the bound: %v", err)
				}
				return
			}
			if !errors.Is(err, segment.ErrClockSkew) || errs.KindOf(err) != errs.Unavailable || !strings.Contains(err.Error(), tt.words) {
				t.Fatalf("Next with the clocks %v apart = %v, want ErrClockSkew, kind unavailable, saying %q", tt.offset, err, tt.words)
			}
			if skew, _ := a.ClockSkew(); skew != tt.offset {
				t.Errorf("ClockSkew() = %v, want %v", skew, tt.offset)
			}
			for _, call := range []func() error{
				func() error { return a.NextN(ctx, "d", make([]int64, 2)) },
				func() error { _, err := a.NextText(ctx, "d"); return err },
			} {
				if err := call(); !errors.Is(err, segment.ErrClockSkew) {
					t.Errorf("a batch or text call = %v, want ErrClockSkew", err)
				}
			}
			for range 3 {
				if _, err := a.Next(ctx, "s"); err != nil {
					t.Fatalf("the sequential tag beside it: %v", err)
				}
			}

			st.offset.Store(int64(200 * time.Millisecond))
			waitUntil(t, "dated tags served again", func() bool {
				_, err := a.Next(ctx, "d")
				return err == nil
			})
			if st.nowCalls.Load() == 0 {
				t.Errorf("the store's clock was never read without a fetch")
			}
		})
	}
}

// TestDatedClockCheckedWithoutFetches: while no fetch reads the store's
// clock, the allocator reads it every TagRefresh (by its own clock), and
// a skew that appears meanwhile refuses dated tags without any request.
func TestDatedClockCheckedWithoutFetches(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(utc(2026, 11, 26, 10, 0, 0, 0))
	a, st := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 1000}, segment.Config{TagRefresh: 20 * time.Millisecond})
	if _, err := a.Next(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	st.offset.Store(int64(3 * time.Second))
	calls := st.nowCalls.Load()
	time.Sleep(100 * time.Millisecond) // ticks, but TagRefresh has not passed on the instance's clock
	if got := st.nowCalls.Load(); got != calls {
		t.Errorf("%d reads of the store's clock within TagRefresh of the last fetch, want 0", got-calls)
	}
	clock.Add(20 * time.Millisecond)
	waitUntil(t, "the skew found", func() bool { _, err := a.Next(ctx, "d"); return errors.Is(err, segment.ErrClockSkew) })
	if skew, at := a.ClockSkew(); skew != 3*time.Second || !at.Equal(clock.Now()) {
		t.Errorf("ClockSkew() = %v at %v, want 3s at %v", skew, at, clock.Now())
	}
}

// TestDatedClockMidpoint: the clocks are compared at the middle of the
// store's call, so that a round trip of 4 s, each way 2 s, is not taken
// for a skew: the store's clock reads the instance's at the midpoint.
func TestDatedClockMidpoint(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(utc(2026, 11, 26, 10, 0, 0, 0))
	st := newPeriodStore(clock)
	slow := &slowPeriodStore{periodStore: st, clock: clock, way: 2 * time.Second}
	a := alloctest.New(t, slow, segment.Config{Now: clock.Now})
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "d", Format: segment.FormatDated, Step: 10, Period: dated.Day}); err != nil {
		t.Fatal(err)
	}
	if id, err := a.Next(ctx, "d"); err != nil || id != 20261126000001 {
		t.Fatalf("Next over a slow store = %d, %v; want 20261126000001", id, err)
	}
	if skew, _ := a.ClockSkew(); skew != 0 {
		t.Errorf("ClockSkew() = %v, want 0", skew)
	}
}

// slowPeriodStore takes way on the instance's clock to reach the store
// and way to come back, reading the store's clock in between.
type slowPeriodStore struct {
	*periodStore
	clock *testclock.Clock
	way   time.Duration
}

func (s *slowPeriodStore) FetchPeriod(ctx context.Context, tag string, stamp, start, limit, step int64) (segment.Fetched, error) {
	s.clock.Add(s.way)
	defer s.clock.Add(s.way)
	return s.periodStore.FetchPeriod(ctx, tag, stamp, start, limit, step)
}
