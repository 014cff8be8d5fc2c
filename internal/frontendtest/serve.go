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

// Serve serves srv on a port of 127.0.0.1 with no drain until tb's
// cleanup, which fails tb if Serve returned an error; it returns the
// address.
func Serve(tb testing.TB, srv Server) string {
	tb.Helper()
	return ServeDraining(tb, srv, 0, nil).Addr
}

// Serving is a front end that ServeDraining serves.
type Serving struct {
	// Addr is its address on 127.0.0.1.
	Addr string
	// Stop starts the drain, as SIGTERM does; Served then reports Serve's
	// return.
	Stop context.CancelFunc
	// Served receives Serve's return once. A test that takes it and
	// wants the cleanup to check it too puts it back.
	Served chan error
}

// ServeDraining serves srv on a port of 127.0.0.1 with a drain of drain,
// through wrap's listener when wrap is not nil (to observe connections),
// until tb's cleanup, which stops it, waits for Serve (at most drain +
// 30 s) and fails tb if Serve returned an error. Its cleanup runs before
// those registered earlier: the domain's close after the front end's, as
// in main.
func ServeDraining(tb testing.TB, srv Server, drain time.Duration, wrap func(net.Listener) net.Listener) *Serving {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Serving{Addr: ln.Addr().String(), Served: make(chan error, 1)}
	if wrap != nil {
		ln = wrap(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Stop = cancel
	go func() { s.Served <- srv.Serve(ctx, ln, drain) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-s.Served:
			if err != nil {
				tb.Errorf("Serve: %v", err)
			}
			s.Served <- err // for a test that waits too
		case <-time.After(drain + 30*time.Second):
			tb.Errorf("Serve did not return after the drain")
		}
	})
	return s
}
