package snowflake

import (
	"runtime"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

// t0 is a quarter of a millisecond into a millisecond, so a wait to the next
// millisecond is a recognisable 750µs.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 250_000, time.UTC)

// newFakeGenerator returns a generator on clock c; s's Now and Sleep are
// replaced.
func newFakeGenerator(tb testing.TB, c *testclock.Clock, s Settings) *Generator {
	tb.Helper()
	s.Now, s.Sleep = c.Now, c.Sleep
	g, err := New(s)
	if err != nil {
		tb.Fatalf("New(%+v): %v", s, err)
	}
	return g
}

// mustDecompose takes id apart with g's layout.
func mustDecompose(tb testing.TB, g *Generator, id int64) Parts {
	tb.Helper()
	p, err := g.Layout().Decompose(id)
	if err != nil {
		tb.Fatalf("Decompose(%d): %v", id, err)
	}
	return p
}

// msStart returns the start of the Unix millisecond ms.
func msStart(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// withTimeout runs f and fails with every goroutine's stack if it has not
// returned within d, so a deadlock shows where it is instead of hanging CI.
func withTimeout(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		t.Fatalf("timed out after %v; goroutines:\n%s", d, buf[:runtime.Stack(buf, true)])
	}
}

// mustLayout is NewLayout for inputs a test knows to be valid.
func mustLayout(epoch time.Time, workerBits int) Layout {
	l, err := NewLayout(epoch, workerBits)
	if err != nil {
		panic(err)
	}
	return l
}
