package frontend

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// refusal is a front end's answer at the cap, as an HTTP front end words it.
const refusal = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\nfull"

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

// status reads one answer's status and body, waiting at most wait.
func (c *testConn) status(wait time.Duration) (int, string, error) {
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, "", err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body), err
}

// closedByServer reports whether the server closed c, reading (and
// dropping) any answers still on their way first.
func (c *testConn) closedByServer() bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c.r)
	return err == nil || errors.Is(err, syscall.ECONNRESET) // io.Copy turns EOF into nil
}

// limitedServer serves HTTP on a Limiter of max connections, as package
// server does, its figures on reg. GET /block?c=N answers once block[N] is
// closed; anything else at once.
func limitedServer(t *testing.T, max int, block map[string]chan struct{}, reg *prometheus.Registry) (*Limiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(reg, "http", "max_conns")
	if err != nil {
		t.Fatal(err)
	}
	lim := Limit(ln, Cap{Max: max, Refusal: []byte(refusal), Metrics: m})
	lim.stuckAfter = time.Hour // the order here is by idleness and age, not by the clock
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				<-block[r.URL.Query().Get("c")]
			}
			_, _ = io.WriteString(w, "ok")
		}),
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateNew {
				Begin(c, time.Now())
				return
			}
			SetIdle(c, st == http.StateIdle)
		},
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
func (l *Limiter) idleOrder() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var idle []*Conn
	for c := range l.conns {
		if c.idleSince.Load() != 0 {
			idle = append(idle, c)
		}
	}
	slices.SortFunc(idle, func(a, b *Conn) int { return cmp.Compare(a.idleSince.Load(), b.idleSince.Load()) })
	out := make([]string, len(idle))
	for i, c := range idle {
		out[i] = c.RemoteAddr().String()
	}
	return out
}

// open is the number of connections the limiter holds.
func (l *Limiter) open() int {
	return l.counts().open
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

// TestMaxConnsClosesIdleFirst: with a cap of 2 and both connections open,
// a third client is served at once when one of them is idle, the one idle
// the longest being closed for it, or yet to send its request (as HTTP
// marks a new connection, Begin) when none is idle; a connection in a
// request is never closed, and with every one in a request the newcomer
// is answered the refusal and closed, the others kept.
func TestMaxConnsClosesIdleFirst(t *testing.T) {
	type op struct {
		conn int
		do   string // "get" /, "block" (a request held in the handler)
	}
	tests := []struct {
		name       string
		before     []op
		refused    bool // the newcomer is refused, else served
		closed     int  // the connection the limiter closes for the newcomer; -1 none
		incomplete bool // closed yet to send its request, else idle
	}{
		{"both idle: the longest idle closes", []op{{0, "get"}, {1, "get"}}, false, 0, false},
		{"idle order, not opening order", []op{{0, "get"}, {1, "get"}, {0, "get"}}, false, 1, false},
		{"one in a request: the idle one closes", []op{{0, "block"}, {1, "get"}}, false, 1, false},
		{"none idle: refused", []op{{0, "block"}, {1, "block"}}, true, -1, false},
		{"one yet to send, briefly: the idle one closes", []op{{0, "get"}}, false, 0, false},
		{"one yet to send, none idle: it closes", []op{{0, "block"}}, false, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := map[string]chan struct{}{"0": make(chan struct{}), "1": make(chan struct{})}
			var releaseOnce [2]sync.Once
			release := func(i int) { releaseOnce[i].Do(func() { close(block[fmt.Sprint(i)]) }) }
			t.Cleanup(func() { release(0); release(1) })
			reg := prometheus.NewRegistry()
			lim, addr := limitedServer(t, 2, block, reg)
			conns := []*testConn{dial(t, addr), dial(t, addr)}
			waitFor(t, "2 connections open", func() bool { return lim.open() == 2 })

			var idle []string // the model of lim's idle list
			busy := map[int]bool{}
			incomplete := map[int]bool{0: true, 1: true} // new: their requests' headers yet to come
			for _, o := range tt.before {
				c := conns[o.conn]
				me := c.LocalAddr().String()
				idle = slices.DeleteFunc(idle, func(a string) bool { return a == me })
				delete(incomplete, o.conn)
				switch o.do {
				case "get":
					c.send(t, "/")
					if code, _, err := c.status(10 * time.Second); err != nil || code != 200 {
						t.Fatalf("GET on connection %d: got %d, %v; want 200", o.conn, code, err)
					}
					idle = append(idle, me)
				case "block":
					c.send(t, fmt.Sprintf("/block?c=%d", o.conn))
					busy[o.conn] = true
				}
				waitFor(t, fmt.Sprintf("idle list %v, %d incomplete", idle, len(incomplete)), func() bool {
					return slices.Equal(lim.idleOrder(), idle) && lim.counts().incomplete == len(incomplete)
				})
			}

			newcomer := dial(t, addr)
			newcomer.send(t, "/")
			code, body, err := newcomer.status(10 * time.Second)
			switch {
			case tt.refused && (err != nil || code != 503 || body != "full"):
				t.Fatalf("newcomer with no connection idle: got %d %q, %v; want the refusal", code, body, err)
			case tt.refused && !newcomer.closedByServer():
				t.Error("newcomer refused: still open, want it closed")
			case !tt.refused && (err != nil || code != 200):
				t.Fatalf("newcomer: got %d, %v; want 200", code, err)
			}

			for i, c := range conns {
				switch {
				case i == tt.closed:
					if !c.closedByServer() {
						t.Errorf("connection %d: still open, want it closed for the newcomer", i)
					}
				case busy[i]: // kept: its request is answered
					release(i)
					if code, _, err := c.status(10 * time.Second); err != nil || code != 200 {
						t.Errorf("connection %d in a request at the cap: got %d, %v; want 200 (kept open)", i, code, err)
					}
				default: // idle, or yet to send, and kept: it serves
					c.send(t, "/")
					if code, _, err := c.status(10 * time.Second); err != nil || code != 200 {
						t.Errorf("connection %d after the newcomer: got %d, %v; want 200 (kept open)", i, code, err)
					}
				}
			}
			want := map[string]float64{
				"idalloc_http_idle_connections_closed_total": 0, "idalloc_http_incomplete_connections_closed_total": 0,
				"idalloc_http_connections_refused_total": 0, "idalloc_http_connections": 2,
			}
			switch {
			case tt.refused:
				want["idalloc_http_connections_refused_total"] = 1
			case tt.incomplete:
				want["idalloc_http_incomplete_connections_closed_total"] = 1
			default:
				want["idalloc_http_idle_connections_closed_total"] = 1
			}
			for name, v := range want {
				waitFor(t, fmt.Sprintf("%s %v", name, v), func() bool { return gathered(t, reg, name) == v })
			}
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

// TestVictim: at the cap the connection to close is the one incomplete
// the longest (Begin) if for over stuckAfter, else the one that went idle
// first, whatever order they opened in, else the one incomplete the
// longest; never one that is new, busy or closed.
func TestVictim(t *testing.T) {
	type step struct {
		op   byte // i = goes idle, a = goes busy, b = Begin at, c = closes
		conn byte
		at   time.Duration // since the limiter's base, for b
	}
	idle := func(c byte) step { return step{'i', c, 0} }
	busy := func(c byte) step { return step{'a', c, 0} }
	closes := func(c byte) step { return step{'c', c, 0} }
	begin := func(c byte, at time.Duration) step { return step{'b', c, at} }
	const stuck = stuckAfter
	tests := []struct {
		name  string
		steps []step
		now   time.Duration
		want  string // "" for none
	}{
		{"first idle", []step{idle('a'), idle('b'), idle('c')}, stuck, "a"},
		{"busy again", []step{idle('a'), idle('b'), idle('c'), busy('a')}, stuck, "b"},
		{"idle again goes to the back", []step{idle('a'), idle('b'), busy('a'), idle('a')}, stuck, "b"},
		{"closed", []step{idle('a'), idle('b'), closes('a')}, stuck, "b"},
		{"none idle", []step{idle('a'), idle('b'), busy('a'), busy('b')}, stuck, ""},
		{"new connections are busy", nil, stuck, ""},
		{"incomplete briefly: idle first", []step{idle('a'), begin('b', stuck)}, 3 * stuck / 2, "a"},
		{"incomplete for stuckAfter: idle first", []step{idle('a'), begin('b', stuck)}, 2 * stuck, "a"},
		{"incomplete past stuckAfter: before idle", []step{idle('a'), begin('b', stuck)}, 2*stuck + 1, "b"},
		{"the one incomplete longest", []step{begin('a', 2*stuck), begin('b', stuck), idle('c')}, 4 * stuck, "b"},
		{"only incomplete: the longest, however briefly", []step{begin('a', 2*stuck), begin('b', stuck)}, 2 * stuck, "b"},
		{"busy ends incomplete", []step{begin('a', stuck), busy('a')}, 10 * stuck, ""},
		{"idle ends incomplete", []step{begin('a', stuck), idle('b'), idle('a')}, 10 * stuck, "b"},
		{"closed while incomplete", []step{begin('a', stuck), begin('b', 2*stuck), closes('a')}, 10 * stuck, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Limit(nil, Cap{Max: 10})
			name := map[*Conn]string{}
			conn := map[byte]*Conn{}
			for _, n := range []byte("abc") {
				c := &Conn{Conn: nopConn{}, l: l}
				conn[n], name[c] = c, string(n)
				l.conns[c] = struct{}{}
			}
			for _, s := range tt.steps {
				c := conn[s.conn]
				switch s.op {
				case 'i':
					SetIdle(c, true)
				case 'a':
					SetIdle(c, false)
				case 'b':
					Begin(c, l.base.Add(s.at))
				case 'c':
					_ = c.Close()
				}
			}
			if got := l.victim(tt.now); name[got.c] != tt.want {
				t.Errorf("victim = %q, want %q", name[got.c], tt.want)
			}
		})
	}
}

// nopConn is a net.Conn whose Close does nothing, for the limiter's own
// bookkeeping.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// BenchmarkSetIdle is what the cap costs each HTTP request: net/http's
// ConnState hook marks the connection busy, then idle again.
func BenchmarkSetIdle(b *testing.B) {
	l := Limit(nil, Cap{Max: 10})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := &Conn{Conn: nopConn{}, l: l}
		for pb.Next() {
			SetIdle(c, false)
			SetIdle(c, true)
		}
	})
}
