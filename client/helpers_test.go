package client

import (
	"runtime"
	"strings"
	"testing"
)

// newTestClient returns a Client closed at tb's cleanup.
func newTestClient(tb testing.TB, cfg Config) *Client {
	tb.Helper()
	c, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// clientGoroutines returns the stacks of goroutines running this package's
// non-test code, other than the caller's.
func clientGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "idalloc/client.(*buffer)") || strings.Contains(g, "idalloc/client.(*Keeper)") ||
			strings.Contains(g, "idalloc/workerlease.(*Keeper)") {
			out = append(out, g)
		}
	}
	return out
}
