package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// eventually polls cond until it holds or a second passes.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestHealthTransitions drives the store and the buffer through every state
// /health reports, with no traffic but the probes: the background checker
// alone must notice.
func TestHealthTransitions(t *testing.T) {
	rg := newRig(t, func(c *Config, _ *Deps) { c.HealthInterval = 5 * time.Millisecond })
	type state struct {
		status   int
		code     float64
		health   string
		msgSoFar string
	}
	probe := func() state {
		got := rg.do(t, "GET", "/health", "")
		msg, _ := got.body["msg"].(string)
		h, _ := got.body["status"].(string)
		return state{got.status, got.code().(float64), h, msg}
	}
	steps := []struct {
		name   string
		change func()
		want   state
	}{
		{"ok", func() {}, state{200, 0, "ok", "success"}},
		{"degraded", func() { rg.store.set(errors.New("connection refused")) }, state{200, 0, "degraded", "success"}},
		{"unavailable", func() { rg.seg.total.Store(0) }, state{503, 3, "unavailable", "unavailable: the store is unreachable or too slow; retry (IDs already buffered are still served)"}},
		{"ok again", func() { rg.store.set(nil) }, state{200, 0, "ok", "success"}},
		{"draining", func() { rg.srv.draining.Store(true) }, state{503, 3, "draining", "draining: retry on another instance"}},
	}
	for _, st := range steps {
		st.change()
		var got state
		eventually(t, st.name, func() bool { got = probe(); return got == st.want })
		if got != st.want {
			t.Fatalf("%s: got %+v, want %+v", st.name, got, st.want)
		}
	}
	// Draining also answers the per-tag form, so any probe takes us out.
	if got := rg.do(t, "GET", "/health?app_tag=order", ""); got.status != http.StatusServiceUnavailable || got.body["status"] != "draining" {
		t.Errorf("per-tag health while draining: %d %s, want 503 draining", got.status, got.raw)
	}
}

// TestHealthAtStart checks that the first answer reflects the store without
// waiting for the first tick.
func TestHealthAtStart(t *testing.T) {
	rg := newRig(t, func(c *Config, d *Deps) {
		c.HealthInterval = time.Hour
		p := &fakePinger{}
		p.set(errors.New("down"))
		d.Store = p
	})
	if got := rg.do(t, "GET", "/health", ""); got.body["status"] != "degraded" {
		t.Errorf("got %s, want degraded at once", got.raw)
	}
}

func TestCloseStopsChecker(t *testing.T) {
	rg := newRig(t, func(c *Config, _ *Deps) { c.HealthInterval = time.Millisecond })
	done := make(chan struct{})
	go func() {
		_ = rg.srv.Close()
		_ = rg.srv.Close() // idempotent
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestHealthWhileLeaseWaits: while this instance's lease waits out a holder
// the store may have forgotten (docs/api.md §3), /health stays 200 with its
// state (segments are served) and says how long snowflake IDs wait, as
// /status does for the monitor page.
func TestHealthWhileLeaseWaits(t *testing.T) {
	own := &fakeOwn{lease: newFakeLeases().lease, held: true,
		wait: workerlease.Wait{Reason: workerlease.WaitNoHistory, For: 28500 * time.Millisecond}}
	rg := newRig(t, func(_ *Config, d *Deps) { d.OwnLease = own })
	got := rg.do(t, "GET", "/health", "")
	if got.status != 200 || got.body["status"] != "ok" || got.body["snowflake_wait_ms"] != 28500.0 ||
		got.body["snowflake"] != workerlease.WaitNoHistory {
		t.Errorf("/health while the lease waits: %d %s, want 200 ok with snowflake_wait_ms 28500 and why", got.status, got.raw)
	}
	status := rg.do(t, "GET", "/status", "", "Authorization", "Bearer s3cret-admin-token")
	if !strings.Contains(status.raw, `"opens_in_seconds":28.5`) {
		t.Errorf("/status lease: %s, want opens_in_seconds 28.5", status.raw)
	}
	own.wait = workerlease.Wait{}
	if got := rg.do(t, "GET", "/health", ""); got.raw != `{"resp_code":0,"msg":"success","status":"ok"}` {
		t.Errorf("/health once the wait is over: %s", got.raw)
	}
}
