package segment

import (
	"testing"
	"time"
)

// TestDatedNanos: a dated claim takes the coarse reading only inside its
// period and more than coarseSlack before its end; at the boundary, before
// the period, and with no period yet, it reads the real clock. An injected
// clock is always read as it is.
func TestDatedNanos(t *testing.T) {
	real := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	p := &period{startNano: real.Add(-time.Hour).UnixNano(), endNano: real.Add(time.Hour).UnixNano()}
	cases := []struct {
		name   string
		on     bool
		coarse int64
		p      *period
		want   int64
	}{
		{"inside, away from the end: the coarse reading", true, real.Add(-time.Minute).UnixNano(), p, real.Add(-time.Minute).UnixNano()},
		{"within the slack of the end: the real clock", true, p.endNano - int64(coarseSlack) + 1, p, real.UnixNano()},
		{"past the end: the real clock", true, p.endNano, p, real.UnixNano()},
		{"before the period: the real clock", true, p.startNano - 1, p, real.UnixNano()},
		{"no reading yet: the real clock", true, 0, p, real.UnixNano()},
		{"no period yet: the real clock", true, real.Add(-time.Minute).UnixNano(), nil, real.UnixNano()},
		{"an injected clock: read as it is", false, real.Add(-time.Minute).UnixNano(), p, real.UnixNano()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &Allocator{cfg: Config{Now: func() time.Time { return real }}}
			a.coarse.on = c.on
			a.coarse.start.Do(func() {}) // no goroutine: the reading is the case's
			a.coarse.ns.Store(c.coarse)
			if got := a.datedNanos(c.p); got != c.want {
				t.Errorf("datedNanos = %v, want %v", time.Unix(0, got).UTC(), time.Unix(0, c.want).UTC())
			}
		})
	}
}

// TestCoarseClockStopsOnClose: the coarse clock's goroutine runs once a
// dated claim starts it, keeps a reading near the real clock, and ends
// with Close.
func TestCoarseClockStopsOnClose(t *testing.T) {
	a := &Allocator{closing: make(chan struct{})}
	a.coarse.on = true
	a.startCoarse()
	deadline := time.Now().Add(5 * time.Second)
	for a.coarse.ns.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if d := time.Since(time.Unix(0, a.coarse.ns.Load())); d < 0 || d > time.Second {
		t.Errorf("coarse reading %v from now, want within a second", d)
	}
	a.closed.Store(true)
	close(a.closing)
	a.wg.Wait() // returns only when the goroutine has ended
}
