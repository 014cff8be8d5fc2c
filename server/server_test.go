package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config, *Deps)
	}{
		{"no segments", func(_ *Config, d *Deps) { d.Segments = nil }},
		{"no store", func(_ *Config, d *Deps) { d.Store = nil }},
		{"own lease without leases", func(_ *Config, d *Deps) { d.Leases = nil }},
		{"negative max batch", func(c *Config, _ *Deps) { c.MaxBatch = -1 }},
		{"negative max conns", func(c *Config, _ *Deps) { c.MaxConns = -1 }},
		{"metrics without gatherer", func(c *Config, _ *Deps) { c.Metrics = mustMetrics(t, prometheus.NewRegistry()) }},
		{"gatherer without metrics", func(c *Config, _ *Deps) { c.Gatherer = prometheus.NewRegistry() }},
		{"observer alone", func(c *Config, _ *Deps) { c.Observer = mustObserver(t, prometheus.NewRegistry()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			deps := Deps{Segments: newFakeSegments(), Store: &fakePinger{}, Leases: newFakeLeases(), OwnLease: &fakeOwn{}}
			tt.edit(&cfg, &deps)
			if srv, err := New(cfg, deps); err == nil {
				_ = srv.Close()
				t.Errorf("New succeeded, want an error")
			}
		})
	}
}

// get sends GET on a fresh connection, so draining is shown to accept new
// connections, not only to finish old ones.
func get(url string) (int, string, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestServeDrain cancels Serve's context as SIGTERM would: /health turns
// 503 draining at once, /alloc keeps answering on new connections for the
// drain period, then Serve returns nil and the port is closed.
func TestServeDrain(t *testing.T) {
	rg := newRig(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const drain = 600 * time.Millisecond
	served := make(chan error, 1)
	go func() { served <- rg.srv.Serve(ctx, ln, drain) }()

	if code, body, err := get(base + "/health"); err != nil || code != 200 {
		t.Fatalf("before: /health = %d %s %v, want 200", code, body, err)
	}
	cancel()
	stopped := time.Now()
	eventually(t, "draining", func() bool {
		code, body, _ := get(base + "/health")
		return code == http.StatusServiceUnavailable && body == `{"resp_code":3,"msg":"draining: retry on another instance","kind":"draining","status":"draining"}`
	})
	if took := time.Since(stopped); took > drain/3 {
		t.Errorf("/health turned draining after %v, want at once", took)
	}
	for time.Since(stopped) < drain*3/4 {
		if code, body, err := get(base + "/alloc?app_tag=order"); err != nil || code != 200 {
			t.Fatalf("during drain: /alloc = %d %s %v, want 200", code, body, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
		if took := time.Since(stopped); took < drain {
			t.Errorf("Serve returned after %v, before the %v drain", took, drain)
		}
	case <-time.After(drain + 5*time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	if _, _, err := get(base + "/health"); err == nil {
		t.Error("still answering after Serve returned")
	}
}

func TestServeListenerError(t *testing.T) {
	rg := newRig(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
	if err := rg.srv.Serve(context.Background(), ln, time.Second); err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve on a closed listener = %v, want its error", err)
	}
}

// TestServeCapsConnections: at MaxConns, Serve's connection cap closes the
// keep-alive connection idle between requests for a new client (the
// ConnState hook marks it idle), or a new connection whose request's
// headers are incomplete (the hook marks it so); with every connection in
// a request it answers the new connection the contract's 503 for kind
// unavailable and closes it.
func TestServeCapsConnections(t *testing.T) {
	rg := newRig(t, func(c *Config, _ *Deps) { c.MaxConns = 1 })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rg.srv.Serve(ctx, ln, 0) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	}()
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	get := func(c net.Conn, r *bufio.Reader) *http.Response {
		t.Helper()
		if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp
	}

	// A keep-alive connection, idle after one request, is closed for a
	// new client, which is served.
	idle, idleR := dial()
	if resp := get(idle, idleR); resp.StatusCode != 200 {
		t.Fatalf("first client: %d, want 200", resp.StatusCode)
	}
	// net/http marks the connection idle after writing the answer, which
	// the client may read first: wait for the mark, as a client arriving
	// a moment later would find it.
	waitGauge(t, rg, "idalloc_http_idle_connections", 1)
	partial, partialR := dial()
	if _, err := idleR.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection at the cap: read %v, want EOF (closed for the new client)", err)
	}
	// A new connection whose request's headers are incomplete is closed
	// for the next.
	if _, err := io.WriteString(partial, "GET /health HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	next, nextR := dial()
	// Closed with its input unread, it may be reset rather than ended.
	if _, err := partialR.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("connection with its headers incomplete at the cap: read %v, want EOF (closed for the new client)", err)
	}
	if resp := get(next, nextR); resp.StatusCode != 200 {
		t.Fatalf("client after the incomplete one: %d, want 200", resp.StatusCode)
	}
	waitGauge(t, rg, "idalloc_http_idle_connections", 1)
	// A connection in a request (its handler waits for the body) is
	// kept: a third is refused.
	busy, busyR := dial()
	if _, err := nextR.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection at the cap: read %v, want EOF (closed for the new client)", err)
	}
	if _, err := io.WriteString(busy, "POST /tags HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer s3cret-admin-token\r\n"+
		"Content-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := busyR.ReadString('\n'); err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("POST with Expect: 100-continue: %q %v, want 100 Continue (its handler reads the body)", line, err)
	}
	if _, err := busyR.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_, overR := dial()
	resp, err := http.ReadResponse(overR, nil)
	if err != nil {
		t.Fatalf("connection over the cap: %v, want a 503", err)
	}
	body, _ := io.ReadAll(resp.Body)
	want := `{"resp_code":3,"msg":"too many connections: max_conns are open, each in a request; retry shortly, on another instance if you have one","kind":"unavailable"}`
	if resp.StatusCode != 503 || string(body) != want || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Content-Type") != "application/json" || !resp.Close {
		t.Errorf("connection over the cap: %d %v %s, want 503 with Retry-After: 1, Connection: close and %s", resp.StatusCode, resp.Header, body, want)
	}
	if _, err := overR.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("connection over the cap after its answer: read %v, want EOF", err)
	}
	// The busy connection is kept: its request completes and is answered.
	if _, err := io.WriteString(busy, "{}"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(busyR, nil); err != nil || resp.StatusCode != 400 {
		t.Errorf("connection busy at the cap: %v %v, want its answer, 400 (kept)", resp, err)
	}
}

// waitGauge waits up to 10 s until the gauge name on rg's registry reads
// want.
func waitGauge(t *testing.T, rg *rig, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		families, err := rg.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetGauge().GetValue() == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not reach %v within 10 s", name, want)
		}
		time.Sleep(time.Millisecond)
	}
}
