package snowflake

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

// drift is one Observer.Drift call.
type drift struct {
	outcome DriftOutcome
	behind  time.Duration
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	issued []int
	drifts []drift
}

func (r *recorder) Issued(n int) { r.issued = append(r.issued, n) }
func (r *recorder) Drift(o DriftOutcome, behind time.Duration) {
	r.drifts = append(r.drifts, drift{o, behind})
}

// TestObserverReportsDriftOutcomes: each wait, each call refused to try
// later and each call refused once stopped is one Drift, with how far
// behind the clock was; an issued ID is no drift.
func TestObserverReportsDriftOutcomes(t *testing.T) {
	clock := testclock.New(t0)
	var obs recorder
	g := newFakeGenerator(t, clock, Settings{DisableRandomStart: true, Observer: &obs})
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(-5 * time.Millisecond)) // behind by less than the 10ms block
	if _, err := g.Next(); err != nil {
		t.Fatalf("small drift: %v", err)
	}
	if len(obs.drifts) != 1 || obs.drifts[0].outcome != DriftWaited || obs.drifts[0].behind <= 0 || obs.drifts[0].behind > 10*time.Millisecond {
		t.Fatalf("after a small drift, Drift got %v, want one wait of at most 10ms", obs.drifts)
	}
	clock.Set(clock.Now().Add(-500 * time.Millisecond)) // try-later tier: not a wait
	if _, err := g.Next(); !errors.Is(err, ErrClockDriftTryLater) {
		t.Fatalf("half a second behind: got %v, want ErrClockDriftTryLater", err)
	}
	clock.Set(clock.Now().Add(-time.Second)) // beyond the 1s error tier: stops
	for range 2 {
		if err := g.NextN(make([]int64, 3)); !errors.Is(err, ErrClockDriftTooLargeToRecover) {
			t.Fatalf("1.5s behind: got %v, want ErrClockDriftTooLargeToRecover", err)
		}
	}
	want := []DriftOutcome{DriftWaited, DriftTryLater, DriftTooLarge, DriftTooLarge}
	if len(obs.drifts) != len(want) {
		t.Fatalf("Drift got %v, want outcomes %v", obs.drifts, want)
	}
	for i, d := range obs.drifts {
		if d.outcome != want[i] {
			t.Errorf("Drift call %d got %s, want %s", i, d.outcome, want[i])
		}
	}
	if tl := obs.drifts[1].behind; tl <= 10*time.Millisecond || tl > time.Second {
		t.Errorf("try-later drift got %v behind, want within (10ms, 1s]", tl)
	}
	if a, b := obs.drifts[2].behind, obs.drifts[3].behind; a <= time.Second || b != a {
		t.Errorf("too-large drifts got %v and %v behind, want the same drift above 1s twice", a, b)
	}
	if len(obs.issued) != 2 {
		t.Errorf("Issued got %v, want the two IDs of the calls that succeeded", obs.issued)
	}
}

// TestObserverReportsFloorAsTryLater: a clock behind the StartAfterMS floor
// by more than the block is refused to try later, and reported so.
func TestObserverReportsFloorAsTryLater(t *testing.T) {
	clock := testclock.New(t0)
	var obs recorder
	g := newFakeGenerator(t, clock, Settings{StartAfterMS: t0.Add(time.Minute).UnixMilli(), Observer: &obs})
	if _, err := g.Next(); !errors.Is(err, ErrClockDriftTryLater) {
		t.Fatalf("a minute behind the floor: got %v, want ErrClockDriftTryLater", err)
	}
	if len(obs.drifts) != 1 || obs.drifts[0].outcome != DriftTryLater {
		t.Errorf("Drift got %v, want one try_later", obs.drifts)
	}
}

// TestObserverCountsIssued: Issued is told of each successful call's IDs,
// and of nothing for a call that fails.
func TestObserverCountsIssued(t *testing.T) {
	clock := testclock.New(t0)
	var obs recorder
	open := true
	g := newFakeGenerator(t, clock, Settings{Observer: &obs, Fence: func(time.Time, int64) bool { return open }})
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	if err := g.NextN(make([]int64, 5)); err != nil {
		t.Fatal(err)
	}
	open = false
	if _, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced Next: got %v, want ErrFenced", err)
	}
	if err := g.NextN(make([]int64, 4)); !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced NextN: got %v, want ErrFenced", err)
	}
	if len(obs.issued) != 2 || obs.issued[0] != 1 || obs.issued[1] != 5 {
		t.Errorf("Issued got %v, want [1 5]", obs.issued)
	}
	if len(obs.drifts) != 0 {
		t.Errorf("Drift got %v, want none", obs.drifts)
	}
}

// counter is an Observer as a metrics adapter would be: atomics, no
// allocation.
type counter struct{ issued, drifts atomic.Int64 }

func (c *counter) Issued(n int)                      { c.issued.Add(int64(n)) }
func (c *counter) Drift(DriftOutcome, time.Duration) { c.drifts.Add(1) }

// TestObserverKeepsNextAllocationFree: telling an Observer costs Next and
// NextN no allocation.
func TestObserverKeepsNextAllocationFree(t *testing.T) {
	var obs counter
	g, err := New(Settings{Observer: &obs})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]int64, 8)
	got := testing.AllocsPerRun(1000, func() {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
		if err := g.NextN(dst); err != nil {
			t.Fatal(err)
		}
	})
	if got != 0 {
		t.Errorf("Next and NextN allocate %v times per run, want 0", got)
	}
	if n := obs.issued.Load(); n != 1001*9 {
		t.Errorf("Issued counted %d IDs, want %d", n, 1001*9)
	}
}
