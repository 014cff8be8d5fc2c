package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
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
		{"metrics without gatherer", func(c *Config, _ *Deps) { c.Metrics = mustMetrics(t, prometheus.NewRegistry()) }},
		{"gatherer without metrics", func(c *Config, _ *Deps) { c.Gatherer = prometheus.NewRegistry() }},
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

// TestServeReportsConnState: Serve hands Config.ConnState every state a
// connection goes through, which main's connection limiter needs to know
// the idle ones.
func TestServeReportsConnState(t *testing.T) {
	states := make(chan http.ConnState, 16)
	rg := newRig(t, func(c *Config, _ *Deps) {
		c.ConnState = func(_ net.Conn, st http.ConnState) { states <- st }
	})
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
	// One keep-alive request, then the client closes the connection.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health: %v %v, want 200", resp, err)
	}
	resp.Body.Close()
	want := []http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateClosed}
	for i, w := range want {
		if w == http.StateClosed {
			c.Close()
		}
		select {
		case st := <-states:
			if st != w {
				t.Fatalf("state %d: got %v, want %v (in order %v)", i, st, w, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("state %d: none after 10s, want %v", i, w)
		}
	}
}
