package client

import "testing"

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
