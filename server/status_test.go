package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/store/storetest"
)

// Snapshot makes fakeSegments a Segments: a tag's figures as AllStats
// has them, in a fixed double buffer.
func (f *fakeSegments) Snapshot(tag string) (segment.TagSnapshot, bool) {
	f.snapshots.Add(1)
	f.tagsMu.Lock()
	defer f.tagsMu.Unlock()
	if _, ok := f.tags[tag]; !ok {
		return segment.TagSnapshot{}, false
	}
	return segment.TagSnapshot{TagStats: f.statsOf(tag), CurrentLeft: 40, CurrentSize: 1000, Prefetched: 2,
		RowStep: 1000, MaxID: 1 << 60, LastFetch: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), LastFetchTook: 1500 * time.Microsecond}, true
}

// idFields are the tag fields that carry int64 values, as strings.
var idFields = []string{"step", "current_step", "buffered", "current_left", "current_size", "prefetched",
	"issued", "max_id", "given_back", "wasted", "refills"}

var digits = regexp.MustCompile(`^-?[0-9]+$`)

func TestStatusShape(t *testing.T) {
	rg := newRig(t, nil)
	rg.obs.Drift(snowflake.DriftWaited, time.Millisecond)
	rg.obs.Drift(snowflake.DriftTryLater, 20*time.Millisecond)
	rg.obs.Drift(snowflake.DriftTryLater, 30*time.Millisecond)
	rg.obs.Issued(3)

	got := rg.do(t, "GET", "/status", "", adminAuth...)
	if got.status != 200 || got.code() != 0.0 {
		t.Fatalf("got %d %s, want 200 success", got.status, got.raw)
	}
	if got.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got.header.Get("Cache-Control"))
	}
	b := got.body
	if b["status"] != "ok" || b["store_reachable"] != true || b["draining"] != false || b["buffered"] != "84" {
		t.Errorf("instance fields: got %s", got.raw)
	}
	if _, err := time.Parse(time.RFC3339, b["now"].(string)); err != nil {
		t.Errorf("now: %v", err)
	}

	tags, _ := b["tags"].([]any)
	if len(tags) != 2 || tags[0].(map[string]any)["app_tag"] != "order" || tags[1].(map[string]any)["app_tag"] != "test_business" {
		t.Fatalf("tags: got %v, want order and test_business in that order", tags)
	}
	tag := tags[0].(map[string]any)
	for _, f := range idFields {
		if s, ok := tag[f].(string); !ok || !digits.MatchString(s) {
			t.Errorf("tag field %s = %#v, want a string of digits", f, tag[f])
		}
	}
	if tag["max_id"] != "1152921504606846976" { // 2^60: exact, as only a string keeps it in JavaScript
		t.Errorf("max_id = %v, want 2^60 to the digit", tag["max_id"])
	}
	want := map[string]any{"format": "sequential", "length": 0.0, "step": "1000", "current_step": "2000",
		"buffered": "42", "current_left": "40", "current_size": "1000", "prefetched": "2",
		"last_fetch": "2026-11-21T10:00:00.000Z", "last_fetch_ms": 1.5, "fetching": false, "fetch_failing": false}
	for k, v := range want {
		if tag[k] != v {
			t.Errorf("tag %s = %#v, want %#v", k, tag[k], v)
		}
	}

	sf := b["snowflake"].(map[string]any)
	drift := sf["drift"].(map[string]any)
	if sf["enabled"] != true || sf["issued"] != "3" || drift["waited"] != 1.0 || drift["try_later"] != 2.0 || drift["too_large"] != 0.0 {
		t.Errorf("snowflake: got %v, want enabled, 3 issued, drift 1 waited and 2 try_later", sf)
	}
	lease := sf["lease"].(map[string]any)
	if lease["held"] != true || lease["cluster"] != "default" || lease["worker_id"] != 7.0 || lease["max_worker_id"] != 1023.0 ||
		lease["expires_at"] != "2026-11-21T10:00:30.123Z" || lease["seconds_left"] != 12.5 || lease["ttl_seconds"] != 30.0 {
		t.Errorf("lease: got %v", lease)
	}
	if strings.Contains(got.raw, "token") || strings.Contains(got.raw, rg.leases.lease.Token) {
		t.Errorf("the lease's token leaked: %s", got.raw)
	}
}

func TestStatusLeaseStates(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config, *Deps)
		want string
	}{
		{"snowflake off", func(_ *Config, d *Deps) { d.Snowflake, d.OwnLease = nil, nil }, `"snowflake":{"enabled":false,`},
		{"no lease held", func(_ *Config, d *Deps) { d.OwnLease = &fakeOwn{} }, `"lease":{"held":false}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t, c.edit)
			if got := rg.do(t, "GET", "/status", "", adminAuth...); !strings.Contains(got.raw, c.want) {
				t.Errorf("got %s, want it to contain %s", got.raw, c.want)
			}
		})
	}
}

// TestStatusAdmin: /status follows GET /tags' rules (docs/api.md §2); the page
// that polls it loads for anyone, holding no data.
func TestStatusAdmin(t *testing.T) {
	cases := []struct {
		name    string
		token   string
		headers []string
		refused bool
	}{
		{name: "token set, none sent", token: "s3cret-admin-token", refused: true},
		{name: "token set, wrong one", token: "s3cret-admin-token", headers: []string{"Authorization", "Bearer nope"}, refused: true},
		{name: "token set, right one", token: "s3cret-admin-token", headers: adminAuth},
		{name: "the page's own fetch", token: "s3cret-admin-token", headers: append([]string{"Sec-Fetch-Site", "same-origin"}, adminAuth...)},
		{name: "another site's fetch", token: "s3cret-admin-token", headers: append([]string{"Sec-Fetch-Site", "cross-site"}, adminAuth...), refused: true},
		{name: "another Origin", token: "s3cret-admin-token", headers: append([]string{"Origin", "http://evil.example"}, adminAuth...), refused: true},
		{name: "own Origin", token: "s3cret-admin-token", headers: append([]string{"Origin", "http://example.com"}, adminAuth...)},
		{name: "no token configured", token: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t, func(cfg *Config, _ *Deps) { cfg.AdminToken = c.token })
			got := rg.do(t, "GET", "/status", "", c.headers...)
			switch {
			case c.refused && (got.status != 401 || got.code() != 7.0):
				t.Errorf("got %d %s, want 401 resp_code 7", got.status, got.raw)
			case !c.refused && (got.status != 200 || got.code() != 0.0):
				t.Errorf("got %d %s, want 200 success", got.status, got.raw)
			}
			page := serve(rg.srv.Handler(), "GET", "/", "", "192.0.2.1:1234", "")
			if page.Code != 200 || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") {
				t.Errorf("GET /: %d %s, want the page", page.Code, page.Header().Get("Content-Type"))
			}
		})
	}
}

// TestStatusFollowsHealth: /status says what /health says, from the same
// state, and keeps answering 200 so the page can show it.
func TestStatusFollowsHealth(t *testing.T) {
	rg := newRig(t, func(c *Config, _ *Deps) { c.HealthInterval = 5 * time.Millisecond })
	type state struct {
		status    string
		reachable bool
		draining  bool
	}
	for _, st := range []struct {
		name   string
		change func()
		want   state
	}{
		{"ok", func() {}, state{"ok", true, false}},
		{"degraded", func() { rg.store.set(errors.New("connection refused")) }, state{"degraded", false, false}},
		{"unavailable", func() { rg.seg.total.Store(0) }, state{"unavailable", false, false}},
		{"ok again", func() { rg.store.set(nil) }, state{"ok", true, false}},
		{"draining", func() { rg.srv.draining.Store(true) }, state{"draining", true, true}},
	} {
		st.change()
		var got state
		eventually(t, st.name, func() bool {
			r := rg.do(t, "GET", "/status", "", adminAuth...)
			if r.status != 200 {
				t.Fatalf("%s: got %d %s, want 200", st.name, r.status, r.raw)
			}
			got = state{r.body["status"].(string), r.body["store_reachable"].(bool), r.body["draining"].(bool)}
			h := rg.do(t, "GET", "/health", "")
			return got == st.want && h.body["status"] == got.status
		})
	}
}

// TestStatusShowsNoSecret: a scrambled tag's key and the admin token
// appear nowhere in /status or the page, in any spelling.
func TestStatusShowsNoSecret(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite().Open(t)
	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	const token = "s3cret-admin-token"
	srv, err := New(Config{AdminToken: token}, Deps{Segments: alloc, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	rg := &rig{srv: srv}
	if got := rg.do(t, "POST", "/tags", `{"app_tag":"coupon","step":100,"format":"scrambled","length":10}`, adminAuth...); got.status != 201 {
		t.Fatalf("create: %d %s", got.status, got.raw)
	}
	for range 5 {
		if got := rg.do(t, "GET", "/alloc?app_tag=coupon", ""); got.status != 200 {
			t.Fatalf("alloc: %d %s", got.status, got.raw)
		}
	}
	var key []byte
	rows, err := st.Tags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.AppTag == "coupon" {
			key = r.FormatKey
		}
	}
	if len(key) == 0 {
		t.Fatal("the store holds no key for the scrambled tag")
	}

	got := rg.do(t, "GET", "/status", "", adminAuth...)
	if !strings.Contains(got.raw, `"app_tag":"coupon","format":"scrambled","length":10`) || !strings.Contains(got.raw, `"issued":"5"`) {
		t.Fatalf("status lacks the scrambled tag: %s", got.raw)
	}
	var bodies [][]byte
	bodies = append(bodies, []byte(got.raw))
	for _, asset := range []string{"/", "/monitor.js", "/decode.js", "/monitor.css"} {
		bodies = append(bodies, serve(srv.Handler(), "GET", asset, "", "192.0.2.1:1234", "").Body.Bytes())
	}
	secrets := []string{token, "format_key", hex.EncodeToString(key), strings.ToUpper(hex.EncodeToString(key)),
		base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key), string(key)}
	for i, body := range bodies {
		for _, s := range secrets {
			if bytes.Contains(body, []byte(s)) {
				t.Errorf("body %d holds a secret (%q): %s", i, s, body)
			}
		}
	}
}
