package workerlease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/leasefault"
)

// testTTL is the lease TTL of most tests: the default Margin is then 3s, so
// the local deadline is 27s after a renewal is sent, and renewals go every
// 10s.
const testTTL = 30 * time.Second

// faultStore wraps a Store; a non-nil function field replaces the
// method, to inject failures and stalls.
type faultStore = leasefault.Store[AcquireRequest, Lease]

var _ Store = (*faultStore)(nil)

// calls records when each store call of one kind was made (since start) and
// the last_timestamp_ms it carried, for tests that check cadence and
// reservations.
type calls struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
	last  []int64
}

func newCalls() *calls { return &calls{start: time.Now()} }

// add records a call now and returns how many there were, this one included.
func (c *calls) add(last int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = append(c.at, time.Since(c.start))
	c.last = append(c.last, last)
	return len(c.at)
}

func (c *calls) times() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.at...)
}

func (c *calls) lasts() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.last...)
}

func (c *calls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.at)
}

// countReleases makes fs count its releases in c, passing them on to mem.
func countReleases(fs *faultStore, mem Store, c *calls) {
	fs.ReleaseFunc = func(ctx context.Context, cl string, id int64, tok string, last int64) error {
		c.add(last)
		return mem.Release(ctx, cl, id, tok, last)
	}
}

// mustSession starts a Session on store with a Service of cfg and fails the
// test if it cannot.
func mustSession(tb testing.TB, store Store, cfg Config, sc SessionConfig) *Session {
	tb.Helper()
	sc.Service = newTestService(tb, store, cfg)
	s, err := NewSession(context.Background(), sc)
	if err != nil {
		tb.Fatalf("NewSession: %v", err)
	}
	return s
}

// mustKeeper returns a Keeper, not started, on store with a Service of cfg.
func mustKeeper(tb testing.TB, store Store, cfg Config, kc KeeperConfig) *Keeper {
	tb.Helper()
	kc.Service = newTestService(tb, store, cfg)
	k, err := NewKeeper(kc)
	if err != nil {
		tb.Fatalf("NewKeeper: %v", err)
	}
	return k
}

// closeKeeper closes k and fails the test on error.
func closeKeeper(tb testing.TB, k *Keeper, lastMS int64) {
	tb.Helper()
	if err := k.Close(context.Background(), lastMS); err != nil {
		tb.Errorf("Keeper.Close: %v", err)
	}
}

// closeSession closes s and fails the test on error.
func closeSession(tb testing.TB, s *Session, lastMS int64) {
	tb.Helper()
	if err := s.Close(context.Background(), lastMS); err != nil {
		tb.Errorf("Session.Close: %v", err)
	}
}

// fenceNow asks s's fence about an ID stamped with the bubble's now.
func fenceNow(s *Session) bool {
	now := time.Now()
	return s.Fence(now, now.UnixMilli())
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

// secs returns the durations v seconds.
func secs(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Second))
	}
	return out
}

// Retry waits are jittered: half the wait fixed, half drawn by randN. The
// draws are fixed here at either end, so the tests depend on neither chance
// nor timing (virtual time).
var jitterDraws = []struct {
	name  string
	randN func(n time.Duration) time.Duration
}{
	{"lowest draw", func(time.Duration) time.Duration { return 0 }},
	{"highest draw", func(n time.Duration) time.Duration { return n - 1 }},
}
