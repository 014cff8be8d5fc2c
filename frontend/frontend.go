// Package frontend is the shape every front end of idalloc shares, so that
// main serves and stops them in one loop and a new front end is one more
// entry: each is a Server (serve on a listener, drain, cut, net/http's
// Server shape), listened for before anything else is opened (Listen),
// served side by side (Serve), and stopped by one sequence (Stop) that
// drains them, cuts what outlives its share of the stop, and hands back
// what the process holds.
//
// It also holds the one connection cap of every front end (Limiter), with
// one behaviour at the cap: a connection that owes its client nothing (one
// stuck partway through a request or command, else the one idle the
// longest) is closed to make room; with every one busy, the newcomer is
// told so in its protocol's words and closed.
//
// It imports nothing of idalloc's: the front ends import it.
package frontend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Server is a front end.
type Server interface {
	// Serve answers on ln until ctx is done, then drains: it serves the
	// open connections for drain, then closes them as each finishes what
	// it is doing. It returns nil once every connection has ended, or the
	// error that stopped it serving. It closes ln.
	Serve(ctx context.Context, ln net.Listener, drain time.Duration) error
	// Cut closes every connection still open, ending Serve's drain: the
	// stop calls it when connections outlive their share of the stop.
	Cut()
}

// Addr is where a front end listens.
type Addr struct {
	// Name names the front end: its listener in Listeners, its errors
	// ("serve resp: …").
	Name string
	// Key heads an error about Addr, naming where it was set: the
	// config's key and source (`config config.json: key "http_addr"`).
	Key string
	// Addr is the TCP address; empty leaves the front end off.
	Addr string
}

// Listeners are the front ends' listeners, by Addr.Name.
type Listeners map[string]net.Listener

// Listen listens on each address set, in order. It is called before
// anything else is opened, so that a port already taken stops the start
// before a lease or a segment is held; the error names the address's Key
// and the listeners already open are closed.
func Listen(addrs ...Addr) (Listeners, error) {
	ls := Listeners{}
	for _, a := range addrs {
		if a.Addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", a.Addr)
		if err != nil {
			ls.Close()
			return nil, fmt.Errorf("%s: %w", a.Key, err)
		}
		ls[a.Name] = ln
	}
	return ls, nil
}

// Close closes every listener; it is for a start that fails before
// serving them (Serve closes those it serves).
func (ls Listeners) Close() {
	for _, ln := range ls {
		_ = ln.Close()
	}
}

// Front is a front end to serve on its listener.
type Front struct {
	Name     string // in errors: "serve http: …"
	Server   Server
	Listener net.Listener
}

// Serving is front ends serving side by side.
type Serving struct {
	fronts []Front
	done   chan error
}

// Serve starts each front's Server.Serve(ctx, Listener, drain), each in a
// goroutine of its own. When one fails, fail is called with its error,
// named after the front ("serve http: …"), so that the process stops and
// the others drain. Done reports once every one has returned.
func Serve(ctx context.Context, drain time.Duration, fail func(error), fronts ...Front) *Serving {
	s := &Serving{fronts: fronts, done: make(chan error, 1)}
	results := make(chan error, len(fronts))
	for _, f := range fronts {
		go func() {
			err := f.Server.Serve(ctx, f.Listener, drain)
			if err != nil {
				err = fmt.Errorf("serve %s: %w", f.Name, err)
				fail(err)
			}
			results <- err
		}()
	}
	go func() {
		errs := make([]error, 0, len(fronts))
		for range fronts {
			errs = append(errs, <-results)
		}
		s.done <- errors.Join(errs...)
	}()
	return s
}

// Done delivers, once, the errors of every front end's Serve, joined (nil
// when each drained and returned nil).
func (s *Serving) Done() <-chan error { return s.done }

// Cut cuts every front end's connections.
func (s *Serving) Cut() {
	for _, f := range s.fronts {
		f.Server.Cut()
	}
}
