package testclock_test

import (
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	c := testclock.New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now: got %v, want %v", got, start)
	}
	c.Add(time.Second)
	c.Sleep(2 * time.Millisecond)
	c.Sleep(3 * time.Millisecond)
	if got, want := c.Now(), start.Add(time.Second+5*time.Millisecond); !got.Equal(want) {
		t.Errorf("Now after Add and two Sleeps: got %v, want %v", got, want)
	}
	if got, want := c.Waits(), []time.Duration{2 * time.Millisecond, 3 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("Waits: got %v, want %v", got, want)
	}
	if got := c.Waits(); got != nil {
		t.Errorf("Waits a second time: got %v, want none", got)
	}
	c.Set(start.Add(-time.Hour))
	if got, want := c.Now(), start.Add(-time.Hour); !got.Equal(want) {
		t.Errorf("Now after Set back: got %v, want %v", got, want)
	}
}

func TestZeroClock(t *testing.T) {
	var c testclock.Clock
	if got := c.Now(); !got.IsZero() {
		t.Errorf("zero Clock's Now: got %v, want the zero time", got)
	}
}

// TestConcurrent is for -race: readers and movers at once.
func TestConcurrent(t *testing.T) {
	c := testclock.New(time.Unix(0, 0))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			c.Now()
		}
	}()
	for range 1000 {
		c.Add(time.Millisecond)
		c.Sleep(time.Millisecond)
	}
	<-done
	if got, want := c.Now(), time.Unix(2, 0); !got.Equal(want) {
		t.Errorf("Now after 1000 Adds and Sleeps of 1ms: got %v, want %v", got, want)
	}
}
