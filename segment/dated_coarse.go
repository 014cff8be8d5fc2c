package segment

import (
	"sync"
	"sync/atomic"
	"time"
)

// A dated claim must know which period the clock reads, and reading the
// clock costs more than the rest of a claim: time.Now is 60-90 ns on a
// virtual machine's kvm-clock, where a sequential Next is about 15. So,
// with the default clock, dated claims read a coarse one: Unix nanoseconds
// stored by a goroutine of the allocator every coarseTick, started by the
// first dated claim and stopped by Close. A claim takes the real clock
// instead when the coarse reading is within coarseSlack of its period's
// end (or before its start), so a number is never issued for a
// period the real clock has left: the boundary, the one moment the reading
// decides anything, is always judged by the real clock. Everywhere else a
// reading up to a few milliseconds old names the same period; it only
// delays the next period's prefetch, which starts a second or more before
// the end, by as much.
//
// The reading is as old as the goroutine's wait to be scheduled: Go
// preempts a running goroutine after 10 ms, so that is milliseconds on a
// busy process, far inside coarseSlack and dated.max_clock_skew; a process
// stopped whole (SIGSTOP, a suspended machine) runs no claim either.
const (
	coarseTick  = time.Millisecond
	coarseSlack = 100 * time.Millisecond
)

// coarseClock is that reading. It is used only with Config.Now left nil:
// an injected clock is read as it is, every time.
type coarseClock struct {
	on    bool         // Config.Now was nil
	ns    atomic.Int64 // the reading; 0 until the goroutine's first tick
	start sync.Once
}

// datedNanos is the clock's reading, in Unix nanoseconds, for a claim on
// p (nil: none current yet): the coarse reading while it lies inside p
// and away from its end, else the real clock.
func (a *Allocator) datedNanos(p *period) int64 {
	c := &a.coarse
	if !c.on || p == nil {
		return a.now().UnixNano()
	}
	c.start.Do(a.startCoarse)
	ns := c.ns.Load()
	if ns < p.startNano || ns >= p.endNano-int64(coarseSlack) {
		return a.now().UnixNano()
	}
	return ns
}

// startCoarse starts the goroutine that keeps the coarse reading, owned by
// the allocator (Close waits for it, as for the fetch goroutines).
func (a *Allocator) startCoarse() {
	a.lifeMu.Lock()
	defer a.lifeMu.Unlock()
	if a.closed.Load() {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		t := time.NewTicker(coarseTick)
		defer t.Stop()
		for {
			a.coarse.ns.Store(time.Now().UnixNano())
			select {
			case <-a.closing:
				return
			case <-t.C:
			}
		}
	}()
}
