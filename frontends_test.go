package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/leasestore"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// protocol is one front end's protocol, as a test client speaks it.
type protocol struct {
	name string // the front end, and its metrics' subsystem
	// whole is a request or command and the start of its answer; partial
	// is its first part, rest the remainder.
	whole, partial, rest, answer string
	// refusal is the start of what a connection refused at the cap reads.
	refusal string
	// silentIdle: a connection yet to send anything is idle. HTTP's is
	// not: it is incomplete, its request's headers yet to come, from its
	// accept. RESP's is: client pools open connections ahead of use, and a
	// command begins with its first bytes.
	silentIdle bool
}

var protocols = []protocol{
	{
		name:    "http",
		whole:   "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n",
		partial: "GET /health HTTP/1.1\r\n", rest: "Host: localhost\r\n\r\n",
		answer:  "HTTP/1.1 200 OK",
		refusal: "HTTP/1.1 503 Service Unavailable",
	},
	{
		name:    "resp",
		whole:   "PING\r\n",
		partial: "*1\r\n$4\r\nPI", rest: "NG\r\n",
		answer:     "+PONG",
		refusal:    "-ERR max number of clients reached",
		silentIdle: true,
	},
}

// client is a raw connection to a front end.
type client struct {
	net.Conn
	r *bufio.Reader
}

// ask writes s and returns the first line of the answer.
func (c *client) ask(t *testing.T, s string) string {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read an answer: %v (got %q)", err, line)
	}
	if strings.HasPrefix(line, "HTTP/") { // the rest of an HTTP answer
		var n int
		for h := ""; h != "\r\n"; {
			if h, err = c.r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			if v, ok := strings.CutPrefix(strings.ToLower(h), "content-length: "); ok {
				_, _ = fmt.Sscan(v, &n)
			}
		}
		if _, err := io.ReadFull(c.r, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	return strings.TrimSuffix(line, "\r\n")
}

// closed reports whether the server closed c.
func (c *client) closed() bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c.r)
	return err == nil || errors.Is(err, syscall.ECONNRESET)
}

// serveBoth serves HTTP and RESP as run does (frontend.Listen, frontEnds,
// frontend.Serve), on a SQLite store, each capped at 2 connections.
func serveBoth(t *testing.T) (frontend.Listeners, *prometheus.Registry) {
	t.Helper()
	cfg, err := config.Load(writeConfig(t, fmt.Sprintf(
		`{"max_conns":2,"resp_max_conns":2,"snowflake":{"enabled":false},"dsn":%q}`,
		filepath.Join(t.TempDir(), "idalloc.db"))), true, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	lns, err := frontend.Listen(frontend.Addr{Name: "http", Addr: "127.0.0.1:0"}, frontend.Addr{Name: "resp", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := prometheus.NewRegistry()
	obs, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	leases, _, _, err := snowflakeParts(leasestore.Store{Store: st, Layouts: st}, cfg, discard, obs)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := segment.New(ctx, st, segment.Config{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(context.Background()) })
	fronts, srv, err := frontEnds(cfg, lns, parts{alloc: alloc, store: st, leases: leases, metrics: obs, reg: reg, log: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	serving := frontend.Serve(ctx, 0, cancel, fronts...)
	t.Cleanup(func() {
		cancel(nil)
		serving.Cut()
		if err := <-serving.Done(); err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	return lns, reg
}

// TestFrontEndsAtTheCap: HTTP and RESP, built and served as run does,
// behave the same at their connection cap (2 here): a new client is
// served and a connection that owes its client nothing is closed for it,
// the one idle the longest (between requests or commands) before one
// partway through a request or command for a moment, and with none idle
// the one partway through the longest. They differ only in whether a
// connection yet to send anything is idle or partway through
// (protocol.silentIdle). A connection in a request is never closed, and
// with every one in a request the newcomer is refused in its protocol's
// words: each front end's tests show it (server's
// TestServeCapsConnections, resp's TestConnectionCap), as making every
// connection busy takes each protocol's own means.
func TestFrontEndsAtTheCap(t *testing.T) {
	type step struct {
		conn int
		do   string // "whole": a request and its answer; "partial": part of one
	}
	type outcome struct {
		idle       int  // connections idle before the newcomer
		closed     int  // the connection closed for the newcomer
		incomplete bool // it was partway through a request or command, else idle
	}
	tests := []struct {
		name  string
		steps []step
		want  outcome
		// silentIdle, if set, is the outcome where a connection yet to
		// send anything is idle.
		silentIdle *outcome
	}{
		{"one idle: it is closed for the newcomer", []step{{0, "whole"}, {1, "partial"}}, outcome{1, 0, false}, nil},
		{"the one idle the longest is closed", []step{{0, "whole"}, {1, "whole"}, {0, "whole"}}, outcome{2, 1, false}, nil},
		{"none idle: the one partway through the longest is closed", []step{{0, "partial"}, {1, "partial"}}, outcome{0, 0, true}, nil},
		{"one silent, one partway through", []step{{1, "partial"}}, outcome{0, 0, true}, &outcome{1, 0, false}},
	}
	for _, tt := range tests {
		lns, reg := serveBoth(t)
		for _, w := range protocols {
			want := tt.want
			if w.silentIdle && tt.silentIdle != nil {
				want = *tt.silentIdle
			}
			t.Run(w.name+"/"+tt.name, func(t *testing.T) {
				gauge := func(name string) float64 { return gathered(t, reg, "idalloc_"+w.name+"_"+name) }
				addr := lns[w.name].Addr().String()
				dial := func() *client {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { c.Close() })
					return &client{c, bufio.NewReader(c)}
				}
				// The connections are opened in order, each when first
				// needed: an HTTP connection is incomplete from its accept,
				// and one open for over 250 ms before the newcomer would be
				// closed before an idle one (frontend.Limiter).
				conns := make([]*client, 2)
				partial, idle, incomplete := map[int]bool{}, map[int]bool{}, map[int]bool{}
				opened := 0
				open := func(n int) {
					for i := range n {
						if conns[i] == nil {
							conns[i] = dial()
							opened++
							if w.silentIdle {
								idle[i] = true
							} else {
								incomplete[i] = true
							}
						}
					}
				}
				for _, s := range tt.steps {
					open(s.conn + 1)
					c := conns[s.conn]
					switch s.do {
					case "partial":
						if _, err := io.WriteString(c, w.partial); err != nil {
							t.Fatal(err)
						}
						partial[s.conn], incomplete[s.conn] = true, true
						delete(idle, s.conn)
					case "whole":
						if got := c.ask(t, w.whole); got != w.answer {
							t.Fatalf("connection %d: got %q, want %q", s.conn, got, w.answer)
						}
						idle[s.conn] = true
						delete(incomplete, s.conn)
					}
					// Each step is seen before the next, so that the order
					// of going idle, or of beginning, is the steps'. (A
					// connection answered was marked busy before its
					// answer was written.)
					waitFor(t, fmt.Sprintf("%d connections idle, %d incomplete", len(idle), len(incomplete)), func() bool {
						return gauge("connections") == float64(opened) && gauge("idle_connections") == float64(len(idle)) &&
							gauge("incomplete_connections") == float64(len(incomplete))
					})
				}
				open(len(conns))
				waitFor(t, "2 connections open", func() bool { return gauge("connections") == 2 })
				if len(idle) != want.idle {
					t.Fatalf("%d connections idle before the newcomer, want %d", len(idle), want.idle)
				}

				if got := dial().ask(t, w.whole); got != w.answer {
					t.Errorf("newcomer at the cap: got %q, want %q", got, w.answer)
				}
				for i, c := range conns {
					switch {
					case i == want.closed:
						if !c.closed() {
							t.Errorf("connection %d: still open, want it closed for the newcomer", i)
						}
					case partial[i]:
						if got := c.ask(t, w.rest); got != w.answer {
							t.Errorf("connection %d, partway through a request at the cap: got %q, want %q (kept)", i, got, w.answer)
						}
					default:
						if got := c.ask(t, w.whole); got != w.answer {
							t.Errorf("connection %d, not the one to close: got %q, want %q (kept)", i, got, w.answer)
						}
					}
				}
				closedIdle, closedIncomplete := 1.0, 0.0
				if want.incomplete {
					closedIdle, closedIncomplete = 0, 1
				}
				for name, v := range map[string]float64{
					"idle_connections_closed_total": closedIdle, "incomplete_connections_closed_total": closedIncomplete,
					"connections_refused_total": 0,
				} {
					if got := gauge(name); got != v {
						t.Errorf("idalloc_%s_%s = %v, want %v", w.name, name, got, v)
					}
				}
			})
		}
	}
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

// TestMaxTagSeriesWired: metrics.max_tag_series reaches the metrics, and
// the metrics' default is config's.
func TestMaxTagSeriesWired(t *testing.T) {
	if config.DefaultMaxTagSeries != metrics.DefaultMaxTagSeries {
		t.Errorf("config's default max_tag_series %d, the metrics' %d", config.DefaultMaxTagSeries, metrics.DefaultMaxTagSeries)
	}
	cfg, err := config.Load(writeConfig(t, fmt.Sprintf(`{"metrics":{"max_tag_series":1},"snowflake":{"enabled":false},"dsn":%q}`,
		filepath.Join(t.TempDir(), "idalloc.db"))), true, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, tag := range []string{"one", "two"} {
		if err := st.CreateTag(ctx, segment.Tag{AppTag: tag, Step: 10, Start: 1}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	obs, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := segment.New(ctx, st, segment.Config{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	lns, err := frontend.Listen(frontend.Addr{Name: "http", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lns["http"].Close() })
	_, srv, err := frontEnds(cfg, lns, parts{alloc: alloc, store: st, metrics: obs, reg: reg, log: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, mf := range mfs {
		if mf.GetName() != "idalloc_segment_step" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				tags = append(tags, l.GetValue())
			}
		}
	}
	if len(tags) != 2 || !slices.Contains(tags, "_other") {
		t.Errorf("idalloc_segment_step's app_tags: %v, want one tag and _other", tags)
	}
}
