// Package testclock provides a fake clock for tests: it moves only when a
// test sets or advances it, or when code under test sleeps on it, and it
// records every sleep. It is safe for concurrent use, so a clock can be
// read by goroutines of the code under test while the test moves it.
//
// The clock returns the times it is given: a start taken from time.Now
// keeps its monotonic reading through Add and Sleep, one built with
// time.Date has none.
package testclock

import (
	"sync"
	"time"
)

// Clock is a settable clock. Use its methods as the Now and Sleep fields of
// the code under test (Now: c.Now, Sleep: c.Sleep). The zero Clock reads
// the zero time; New starts it elsewhere.
type Clock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

// New returns a clock that reads t until it is moved.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t, forward or back.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add moves the clock by d (back if d is negative). It is not recorded as
// a sleep.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Sleep moves the clock by d at once and records d, for Waits.
func (c *Clock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.waits = append(c.waits, d)
}

// Waits returns the sleeps recorded since the last call, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waits
	c.waits = nil
	return w
}
