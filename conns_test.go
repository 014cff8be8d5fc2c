package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testConn is a client's keep-alive connection.
type testConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(tb testing.TB, addr string) *testConn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &testConn{c, bufio.NewReader(c)}
}

// send writes a keep-alive GET of path without reading the answer.
func (c *testConn) send(tb testing.TB, path string) {
	tb.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		tb.Fatal(err)
	}
}

// status reads one answer's status, waiting at most wait.
func (c *testConn) status(wait time.Duration) (int, error) {
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// closedByServer reports whether the server closed c, reading (and
// dropping) any answers still on their way first.
func (c *testConn) closedByServer() bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c.r)
	return err == nil || errors.Is(err, syscall.ECONNRESET) // io.Copy turns EOF into nil
}

// limitedServer serves on a connLimiter of max connections, wired as main
// wires it. GET /block?c=N answers once block[N] is closed; anything else
// at once.
func limitedServer(t *testing.T, max int, block map[string]chan struct{}) (*connLimiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := limitConns(ln, max)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				<-block[r.URL.Query().Get("c")]
			}
			_, _ = io.WriteString(w, "ok")
		}),
		ConnState: lim.connState,
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(lim) }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: got %v, want ErrServerClosed", err)
		}
	})
	return lim, ln.Addr().String()
}

// idleOrder is the limiter's idle connections as the clients' local
// addresses, longest idle first.
func (l *connLimiter) idleOrder() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var idle []*limitedConn
	for c := range l.conns {
		if c.idleSince.Load() != 0 {
			idle = append(idle, c)
		}
	}
	slices.SortFunc(idle, func(a, b *limitedConn) int { return cmp.Compare(a.idleSince.Load(), b.idleSince.Load()) })
	out := make([]string, len(idle))
	for i, c := range idle {
		out[i] = c.RemoteAddr().String()
	}
	return out
}

// waitFor polls cond for up to 10s; the bound only limits how long a
// failing test looks.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
	}
}

// TestMaxConnsClosesIdleFirst: with max_conns 2 and both connections open,
// a third client is served at once when one of them is idle, the one idle
// the longest being closed for it; a connection in a request or yet to
// send its first is never closed, and with none idle the newcomer waits
// until one goes idle or closes.
func TestMaxConnsClosesIdleFirst(t *testing.T) {
	type op struct {
		conn int
		do   string // "get" /, "block" (a request held in the handler), "release" it, "close" the client
	}
	tests := []struct {
		name   string
		before []op
		unlock *op // nil: the newcomer is served at once; else it waits until this
		closed int // the connection the limiter closes for the newcomer; -1 none
	}{
		{"both idle: the longest idle closes", []op{{0, "get"}, {1, "get"}}, nil, 0},
		{"idle order, not opening order", []op{{0, "get"}, {1, "get"}, {0, "get"}}, nil, 1},
		{"one in a request: the idle one closes", []op{{0, "block"}, {1, "get"}}, nil, 1},
		{"none idle: waits until one goes idle", []op{{0, "block"}, {1, "block"}}, &op{1, "release"}, 1},
		{"one yet to send: waits until one closes", []op{{0, "block"}}, &op{1, "close"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := map[string]chan struct{}{"0": make(chan struct{}), "1": make(chan struct{})}
			var releaseOnce [2]sync.Once
			release := func(i int) { releaseOnce[i].Do(func() { close(block[fmt.Sprint(i)]) }) }
			t.Cleanup(func() { release(0); release(1) })
			lim, addr := limitedServer(t, 2, block)
			reg := prometheus.NewRegistry()
			if err := lim.register(reg); err != nil {
				t.Fatal(err)
			}
			conns := []*testConn{dial(t, addr), dial(t, addr)}
			waitFor(t, "2 connections open", func() bool { return lim.open() == 2 })

			var idle []string // the model of lim's idle list
			busy := map[int]bool{}
			apply := func(o op) {
				c := conns[o.conn]
				me := c.LocalAddr().String()
				idle = slices.DeleteFunc(idle, func(a string) bool { return a == me })
				switch o.do {
				case "get":
					c.send(t, "/")
					if code, err := c.status(10 * time.Second); err != nil || code != 200 {
						t.Fatalf("GET on connection %d: got %d, %v; want 200", o.conn, code, err)
					}
					idle = append(idle, me)
				case "block":
					c.send(t, fmt.Sprintf("/block?c=%d", o.conn))
					busy[o.conn] = true
				case "release":
					release(o.conn)
					busy[o.conn] = false
				case "close":
					c.Close()
				}
			}
			for _, o := range tt.before {
				apply(o)
				waitFor(t, fmt.Sprintf("idle list %v", idle), func() bool { return slices.Equal(lim.idleOrder(), idle) })
			}

			newcomer := dial(t, addr)
			newcomer.send(t, "/")
			if tt.unlock != nil {
				// Served, it would answer in microseconds; the wait only
				// bounds how long the test looks for a bug.
				if code, err := newcomer.status(300 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("newcomer with no connection idle: got %d, %v; want no answer yet", code, err)
				}
				apply(*tt.unlock)
			}
			if code, err := newcomer.status(10 * time.Second); err != nil || code != 200 {
				t.Fatalf("newcomer: got %d, %v; want 200", code, err)
			}

			for i, c := range conns {
				switch {
				case i == tt.closed:
					if !c.closedByServer() {
						t.Errorf("connection %d: still open, want it closed for the newcomer", i)
					}
				case tt.unlock != nil && tt.unlock.conn == i && tt.unlock.do == "close", busy[i]:
				default: // idle and kept: it serves again
					c.send(t, "/")
					if code, err := c.status(10 * time.Second); err != nil || code != 200 {
						t.Errorf("connection %d after the newcomer: got %d, %v; want 200 (kept open)", i, code, err)
					}
				}
			}
			closed, open := 0.0, 3.0 // the newcomer's, kept open
			if tt.closed >= 0 {
				closed, open = 1, 2
			}
			if tt.unlock != nil && tt.unlock.do == "close" {
				open--
			}
			if got := gathered(t, reg, "idalloc_http_idle_connections_closed_total"); got != closed {
				t.Errorf("idalloc_http_idle_connections_closed_total: got %v, want %v", got, closed)
			}
			waitFor(t, fmt.Sprintf("idalloc_http_connections %v", open), func() bool {
				return gathered(t, reg, "idalloc_http_connections") == open
			})
		})
	}
}

// gathered is the value of the one sample of the gauge or counter name.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no single sample of %s", name)
	return 0
}

// TestLongestIdle: at the cap the connection to close is the one that
// went idle first, whatever order they opened in, and never one that is
// new, in a request or closed.
func TestLongestIdle(t *testing.T) {
	tests := []struct {
		name string
		ops  string // i = goes idle, a = goes active, c = closes, then the connection
		want string // "" for none
	}{
		{"first idle", "ia ib ic", "a"},
		{"active again", "ia ib ic aa", "b"},
		{"idle again goes to the back", "ia ib aa ia", "b"},
		{"closed", "ia ib ca", "b"},
		{"none idle", "ia ib aa ab", ""},
		{"new connections are not idle", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := limitConns(nil, 10)
			name := map[*limitedConn]string{}
			conn := map[byte]*limitedConn{}
			for _, n := range []byte("abc") {
				c := &limitedConn{Conn: nopConn{}, l: l}
				conn[n], name[c] = c, string(n)
				l.conns[c] = struct{}{}
			}
			for i := 0; i < len(tt.ops); i += 3 {
				c := conn[tt.ops[i+1]]
				switch tt.ops[i] {
				case 'i':
					l.connState(c, http.StateIdle)
				case 'a':
					l.connState(c, http.StateActive)
				case 'c':
					_ = c.Close()
				}
			}
			got, _ := l.longestIdle()
			if name[got] != tt.want {
				t.Errorf("longestIdle = %q, want %q", name[got], tt.want)
			}
		})
	}
}

// nopConn is a net.Conn whose Close does nothing, for the limiter's own
// bookkeeping.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// TestConnLimiterCloseAll: closeAll cuts every open connection and frees
// its slot; Close releases an Accept waiting for room, closing the
// connection it held.
func TestConnLimiterCloseAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := limitConns(ln, 1)
	defer lim.Close()
	addr := ln.Addr().String()
	client := dial(t, addr)
	if _, err := lim.Accept(); err != nil {
		t.Fatal(err)
	}
	lim.closeAll()
	if got := lim.open(); got != 0 {
		t.Fatalf("open connections after closeAll: got %d, want 0", got)
	}
	if !client.closedByServer() {
		t.Error("client after closeAll: still open, want closed")
	}
	// The slot is free again: a second connection is accepted.
	dial(t, addr)
	c2, err := lim.Accept()
	if err != nil {
		t.Fatalf("Accept after closeAll freed the slot: %v", err)
	}
	// At the cap, with no idle connection (no http.Server reports states
	// here): an Accept holds the third connection and waits; Close
	// releases it and closes that connection.
	third := dial(t, addr)
	accepted := make(chan error, 1)
	go func() {
		_, err := lim.Accept()
		accepted <- err
	}()
	select {
	case err := <-accepted:
		t.Fatalf("Accept at the cap with nothing idle: got %v, want it to wait", err)
	case <-time.After(100 * time.Millisecond):
	}
	lim.Close()
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept waiting at the cap, then Close: got %v, want net.ErrClosed", err)
	}
	if !third.closedByServer() {
		t.Error("the connection held by the released Accept: still open, want closed")
	}
	c2.Close()
	c2.Close() // a second Close must not free a second slot
	if got := lim.open(); got != 0 {
		t.Errorf("open connections after closing twice: got %d, want 0", got)
	}
}
