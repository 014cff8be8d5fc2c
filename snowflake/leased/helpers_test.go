package leased_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/leasefault"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// testTTL is the lease TTL: the default Margin is then 3s, so a fence
// closes 27s after the last renewal was sent, and renewals go every 10s.
const testTTL = 30 * time.Second

// faultStore wraps a workerlease.Store; a non-nil function field replaces the
// method, to inject failures and stalls.
type faultStore = leasefault.Store[workerlease.AcquireRequest, workerlease.Lease]

var _ workerlease.Store = (*faultStore)(nil)

// skewed returns the bubble's clock shifted by d. Inside testing/synctest
// bubbles time starts at 2000-01-01, before the snowflake epoch, so every
// clock in these tests is shifted into the layout's range.
func skewed(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// toNov2026 moves the bubble's 2000-01-01 to 2026-11-21T10:00:00Z.
const toNov2026 = time.Duration(1795255200000-946684800000) * time.Millisecond

// adjustableClock is the bubble's clock shifted into 2026 and by an offset
// the test can change, to step the clock back.
type adjustableClock struct{ offset atomic.Int64 }

func (c *adjustableClock) Now() time.Time {
	return time.Now().Add(toNov2026 + time.Duration(c.offset.Load()))
}

func (c *adjustableClock) Step(d time.Duration) { c.offset.Add(int64(d)) }

// defaultLayout is the layout the deployment validated: the default epoch
// and 10 worker bits.
func defaultLayout(tb testing.TB) snowflake.Layout {
	tb.Helper()
	l, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		tb.Fatalf("NewLayout: %v", err)
	}
	return l
}

func newService(tb testing.TB, store workerlease.Store, cfg workerlease.Config) *workerlease.Service {
	tb.Helper()
	svc, err := workerlease.NewService(store, cfg)
	if err != nil {
		tb.Fatalf("NewService: %v", err)
	}
	return svc
}

// holder is one process: its clock, Keeper and Source.
type holder struct {
	k   *workerlease.Keeper
	src *leased.Source
}

// newHolder returns a holder on store whose Service, Keeper and generators
// all read now; its Keeper is not started.
func newHolder(tb testing.TB, store workerlease.Store, cfg workerlease.Config, now func() time.Time) *holder {
	tb.Helper()
	cfg.Now = now
	k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: newService(tb, store, cfg), Now: now})
	if err != nil {
		tb.Fatalf("NewKeeper: %v", err)
	}
	src, err := leased.New(k, defaultLayout(tb), snowflake.Settings{Now: now, Sleep: time.Sleep})
	if err != nil {
		tb.Fatalf("leased.New: %v", err)
	}
	return &holder{k, src}
}

// close closes the holder's Keeper with its Source's last timestamp, as a
// process shutting down does, and fails the test on error.
func (h *holder) close(tb testing.TB) {
	tb.Helper()
	if err := h.k.Close(context.Background(), h.src.LastTimestampMS()); err != nil {
		tb.Errorf("Keeper.Close: %v", err)
	}
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
