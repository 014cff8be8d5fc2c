package snowflake

import (
	"fmt"
	"runtime"
	"time"
)

// spinThreshold is how much of a wait is spun rather than slept: time.Sleep
// overshoots by up to about a millisecond on Linux, and each millisecond
// overslept at the end of a sequence is up to 4096 IDs not issued.
const spinThreshold = 2 * time.Millisecond

// clockBehind applies the drift tiers when the clock reads before lastMS;
// g.mu must be held. A nil return means it waited and the caller should read
// the clock again.
//
// Drift is measured to the start of lastMS, the millisecond the last ID
// carries: the moment the generator can issue again (or, with the sequence
// used up or at the StartAfterMS floor, one millisecond before it).
func (g *Generator) clockBehind(now time.Time) error {
	target := time.UnixMilli(g.lastMS)
	behind := target.Sub(now)
	switch {
	case behind <= g.block:
		g.observeDrift(DriftWaited, behind)
		g.waitUntil(now, target)
		return nil
	case !g.issued:
		// The floor is the previous holder's history, not ours: our clock
		// may simply be slower than theirs, so another instance (or later)
		// can still serve.
		g.observeDrift(DriftTryLater, behind)
		return fmt.Errorf("clock is %v behind the floor %d (StartAfterMS or the epoch): %w", behind, g.lastMS, ErrClockDriftTryLater)
	case behind <= g.errMax:
		g.observeDrift(DriftTryLater, behind)
		return fmt.Errorf("clock is %v behind the last issued timestamp %d: %w", behind, g.lastMS, ErrClockDriftTryLater)
	default:
		g.stopErr = fmt.Errorf("clock fell %v behind the last issued timestamp %d, more than %v: %w",
			behind, g.lastMS, g.errMax, ErrClockDriftTooLargeToRecover)
		g.stopBehind = behind
		return g.stopped()
	}
}

// stopped returns the error of a generator stopped for a drift too large,
// reporting the refusal; g.mu must be held.
func (g *Generator) stopped() error {
	g.observeDrift(DriftTooLarge, g.stopBehind)
	return g.stopErr
}

// observeDrift tells the Observer, if any, of a drift; g.mu must be held.
func (g *Generator) observeDrift(outcome DriftOutcome, behind time.Duration) {
	if g.observer != nil {
		g.observer.Drift(outcome, behind)
	}
}

// waitUntil blocks until the clock reads until, given that it read now.
// g.mu stays held: every other caller needs the same millisecond anyway.
func (g *Generator) waitUntil(now, until time.Time) {
	d := until.Sub(now)
	if g.sleep != nil {
		g.sleep(d)
		return
	}
	if d > spinThreshold {
		time.Sleep(d - spinThreshold)
	}
	// Spin until the wall clock, which IDs are stamped with, reaches until;
	// but no longer than d by the monotonic clock (t.Sub(now) uses it): were
	// the wall clock stepped back meanwhile, waiting for it to come round
	// would hold every caller for the length of the step. The caller reads
	// the clock again, and the drift tiers judge the step.
	for t := g.now(); t.Before(until) && t.Sub(now) < d; t = g.now() {
		runtime.Gosched()
	}
}
