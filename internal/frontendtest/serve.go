package frontendtest

import (
	"context"
	"net"
	"testing"
	"time"
)

// Server is what every front end's server does: answer on ln until ctx is
// done, then drain for drain and return (server.Server, resp.Server).
type Server interface {
	Serve(ctx context.Context, ln net.Listener, drain time.Duration) error
}

// Serve serves srv on a port of 127.0.0.1 until tb's cleanup, which stops
// it with no drain and fails tb if Serve returned an error; it returns the
// address.
func Serve(tb testing.TB, srv Server) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 0) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}
