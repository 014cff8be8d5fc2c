package segment_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// periodStore is a fakeStore that keeps dated tags: a counter per (tag,
// stamp) as PeriodStore's contract says, and a clock of its own, the
// test's clock plus an offset the test sets (with no test clock, the
// real one). Hooks let a test block
// fetches (to prove a request did not need one), run code in the middle
// of a fetch, or move the clock while a fetch is under way.
type periodStore struct {
	*fakeStore
	clock  *testclock.Clock
	offset atomic.Int64 // the store's clock less the test's, in ns

	pmu      sync.Mutex
	counters map[stampKey]int64
	// during, when set, runs in every FetchPeriod before the counter
	// moves, with the stamp asked for.
	during func(stamp int64)

	periodFetches atomic.Int64 // FetchPeriod calls started
	nowCalls      atomic.Int64
	giveBacks     atomic.Int64
	// blocked, while set, holds every FetchPeriod until its context ends.
	blocked atomic.Bool
}

type stampKey struct {
	tag   string
	stamp int64
}

var _ segment.PeriodStore = (*periodStore)(nil)

func newPeriodStore(clock *testclock.Clock, tags ...segment.Tag) *periodStore {
	return &periodStore{fakeStore: newFakeStore(tags...), clock: clock, counters: map[stampKey]int64{}}
}

func (s *periodStore) storeNow() time.Time {
	if s.clock == nil { // benchmarks: the real clock
		return time.Now()
	}
	return s.clock.Now().Add(time.Duration(s.offset.Load()))
}

func (s *periodStore) FetchPeriod(ctx context.Context, tag string, stamp, start, limit, step int64) (segment.Fetched, error) {
	s.periodFetches.Add(1)
	if s.blocked.Load() {
		<-ctx.Done()
		return segment.Fetched{}, ctx.Err()
	}
	if s.failing.Load() {
		return segment.Fetched{}, errDown
	}
	s.fakeStore.mu.Lock()
	row := s.rows[tag]
	var rowStep int64
	if row != nil {
		rowStep = row.Step
	}
	s.fakeStore.mu.Unlock()
	if row == nil {
		return segment.Fetched{}, segment.ErrUnknownTag
	}
	if step <= 0 {
		step = rowStep
	}
	s.pmu.Lock()
	during := s.during
	s.pmu.Unlock()
	if during != nil {
		during(stamp)
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	k := stampKey{tag, stamp}
	cur, ok := s.counters[k]
	if !ok {
		cur = start - 1
	}
	if cur >= limit {
		return segment.Fetched{}, segment.ErrExhausted
	}
	next := min(cur+step, limit)
	s.counters[k] = next
	return segment.Fetched{MaxID: next, Size: next - cur, Step: rowStep, Now: s.storeNow()}, nil
}

func (s *periodStore) GiveBackPeriod(_ context.Context, tag string, stamp, oldMax, newMax int64) (bool, error) {
	s.giveBacks.Add(1)
	if s.failing.Load() {
		return false, errDown
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	k := stampKey{tag, stamp}
	if cur, ok := s.counters[k]; !ok || cur != oldMax {
		return false, nil
	}
	s.counters[k] = newMax
	return true, nil
}

func (s *periodStore) Now(context.Context) (time.Time, error) {
	s.nowCalls.Add(1)
	if s.failing.Load() {
		return time.Time{}, errDown
	}
	return s.storeNow(), nil
}

// counter returns the counter of (tag, stamp) and whether it exists.
func (s *periodStore) counter(tag string, stamp int64) (int64, bool) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	n, ok := s.counters[stampKey{tag, stamp}]
	return n, ok
}

func (s *periodStore) setDuring(f func(stamp int64)) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.during = f
}

// waitUntil polls cond until it holds, failing the test, naming what,
// after 5 s.
func waitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// newDatedAllocator makes an allocator on a periodStore on clock, with
// one dated tag created through it.
func newDatedAllocator(tb testing.TB, clock *testclock.Clock, n segment.NewTag, cfg segment.Config) (*segment.Allocator, *periodStore) {
	tb.Helper()
	st := newPeriodStore(clock)
	cfg.Now = clock.Now
	a := alloctest.New(tb, st, cfg)
	n.Format = segment.FormatDated
	if _, err := a.CreateTag(context.Background(), n); err != nil {
		tb.Fatalf("CreateTag(%+v): %v", n, err)
	}
	return a, st
}
