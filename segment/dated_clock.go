package segment

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/errs"
)

// A dated number's stamp is read from this instance's clock (dated's doc
// says why not the store's), so the clock is bounded by the store's:
// every FetchPeriod reads the store's clock in its round trip, and while
// no fetch does, PeriodStore.Now is asked periodically. The two are
// compared at the midpoint of the call, which cancels the network's delay
// when it is the same both ways and leaves at most half the round trip.
// While they differ by more than Config.MaxClockSkew, every dated tag is
// refused (kind unavailable) and every other tag served as ever; the
// first measurement within the bound serves them again. Uniqueness does
// not rest on this (each stamp has its own counter): only that a number's
// stamp is the period it was issued in, give or take the bound.

// DefaultMaxClockSkew is Config.MaxClockSkew when 0 (docs/api.md §11's
// dated.max_clock_skew).
const DefaultMaxClockSkew = time.Second

// clockRecheck bounds how long a refusing allocator waits before asking
// the store's clock again, so that dated tags are served within about
// this of the clocks agreeing even with no fetch under way.
const clockRecheck = time.Second

// ErrClockSkew: a dated tag asked of an instance whose clock differs from
// the store's by more than Config.MaxClockSkew. The error returned names
// the difference measured and the bound; it is this one. Kind unavailable:
// another instance, or this one later, serves the tag.
var ErrClockSkew = errs.E(errs.Unavailable, "", "unavailable: this instance's clock differs from the store's by more than "+
	"dated.max_clock_skew, so it refuses dated tags until they agree (other tags are served); retry on another instance", nil)

// clockCheck is the allocator's bound on its own clock for dated tags.
type clockCheck struct {
	bound time.Duration
	log   *slog.Logger
	// err is the refusal while the clocks disagree, nil while they
	// agree: made once per measurement, so a refusal allocates nothing.
	err atomic.Pointer[errs.Error]

	mu   sync.Mutex
	last time.Time     // this instance's clock at the last measurement
	skew time.Duration // the store's clock less this instance's, then
}

// observe records a measurement: a call to the store began and ended at
// this instance's readings, and read store there.
func (c *clockCheck) observe(began, ended, store time.Time) {
	skew := store.Sub(began.Add(ended.Sub(began) / 2))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.skew = ended, skew
	was := c.err.Load()
	if skew > c.bound || skew < -c.bound {
		c.err.Store(skewError(skew, c.bound))
		if was == nil {
			c.log.Error("dated tags refused: this instance's clock differs from the store's", "skew", skew, "max_clock_skew", c.bound)
		}
	} else if was != nil {
		c.err.Store(nil)
		c.log.Info("dated tags served again: this instance's clock agrees with the store's", "skew", skew, "max_clock_skew", c.bound)
	}
}

// skewError is the refusal for a measured skew: ErrClockSkew naming it.
func skewError(skew, bound time.Duration) *errs.Error {
	way := "behind"
	if skew < 0 {
		way, skew = "ahead of", -skew
	}
	return errs.E(errs.Unavailable, "", fmt.Sprintf("unavailable: this instance's clock is %v %s the store's, more than "+
		"dated.max_clock_skew (%v), so it refuses dated tags until they agree (other tags are served); retry on another instance",
		skew.Round(time.Millisecond), way, bound), ErrClockSkew)
}

// due reports whether the store's clock is to be read now: while the
// clocks disagree, at every recheck; while they agree, once every is
// over since the last measurement (a fetch's or this check's).
func (c *clockCheck) due(now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err.Load() != nil || now.Sub(c.last) >= every
}

// checkClock reads the store's clock when due and the allocator serves
// dated tags; the refresh loop calls it. A store that does not answer
// changes nothing: that is the fetches' concern, not the clock's.
func (a *Allocator) checkClock() {
	if a.periods == nil || !a.hasDated.Load() || !a.clock.due(a.now(), a.cfg.TagRefresh) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.FetchTimeout)
	defer cancel()
	began := a.now()
	t, err := a.periods.Now(ctx)
	ended := a.now()
	if err != nil {
		a.cfg.Logger.Debug("read the store's clock", "err", err)
		return
	}
	a.clock.observe(began, ended, t)
}

// ClockSkew returns the last measured difference between the store's
// clock and this instance's (positive: this instance's is behind), and
// when it was measured by this instance's clock; zero before the first
// measurement, which only an allocator serving dated tags makes.
func (a *Allocator) ClockSkew() (skew time.Duration, at time.Time) {
	a.clock.mu.Lock()
	defer a.clock.mu.Unlock()
	return a.clock.skew, a.clock.last
}
