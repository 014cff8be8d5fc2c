package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestAlloc(t *testing.T) {
	tests := []struct {
		name, target string
		want         string
	}{
		{"one", "/alloc?app_tag=order", `{"resp_code":0,"msg":"success","id":1}`},
		{"percent-encoded tag", "/alloc?app_tag=ord%65r", `{"resp_code":0,"msg":"success","id":1}`},
		{"encoded key", "/alloc?app%5Ftag=order", `{"resp_code":0,"msg":"success","id":1}`},
		{"other parameters ignored", "/alloc?x=1&app_tag=order&y&x=2", `{"resp_code":0,"msg":"success","id":1}`},
		{"tag alphabet", "/alloc?app_tag=test_business", `{"resp_code":0,"msg":"success","id":1}`},
		{"batch of one", "/alloc?app_tag=order&count=1", `{"resp_code":0,"msg":"success","id":1,"ids":[1]}`},
		{"batch", "/alloc?count=3&app_tag=order", `{"resp_code":0,"msg":"success","id":1,"ids":[1,2,3]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.do(t, "GET", tt.target, "")
			if got.status != http.StatusOK || got.raw != tt.want {
				t.Errorf("got %d %s, want 200 %s", got.status, got.raw, tt.want)
			}
			if got.header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got.header.Get("Cache-Control"))
			}
		})
	}
}

func TestAllocMaxBatch(t *testing.T) {
	rg := newRig(t, func(c *Config, _ *Deps) { c.MaxBatch = 1000 })
	got := rg.do(t, "GET", "/alloc?app_tag=order&count=1000", "")
	ids, _ := got.body["ids"].([]any)
	if got.status != 200 || len(ids) != 1000 || got.body["id"] != ids[0] {
		t.Fatalf("got %d with %d ids, id %v; want 200, 1000 ids, id = ids[0]", got.status, len(ids), got.body["id"])
	}
	if !slices.IsSortedFunc(ids, func(a, b any) int { return int(a.(float64) - b.(float64)) }) {
		t.Errorf("ids not increasing: %v", ids[:10])
	}
	// The pooled buffers must not bleed into the next answer.
	if got := rg.do(t, "GET", "/alloc?app_tag=order", ""); got.raw != `{"resp_code":0,"msg":"success","id":1001}` {
		t.Errorf("after a batch got %s", got.raw)
	}
}

func TestLeft(t *testing.T) {
	rg := newRig(t, nil)
	got := rg.do(t, "GET", "/health?app_tag=order", "")
	if want := `{"resp_code":0,"msg":"success","left":42}`; got.status != 200 || got.raw != want {
		t.Errorf("got %d %s, want 200 %s", got.status, got.raw, want)
	}
}

func TestListTags(t *testing.T) {
	rg := newRig(t, nil)
	got := rg.do(t, "GET", "/tags", "", adminAuth...)
	if got.status != 200 || got.code() != 0.0 {
		t.Fatalf("got %d %s, want 200 success", got.status, got.raw)
	}
	tags, _ := got.body["tags"].([]any)
	if len(tags) != 2 {
		t.Fatalf("got %d tags, want 2: %s", len(tags), got.raw)
	}
	first := tags[0].(map[string]any)
	want := map[string]any{"app_tag": "order", "max_id": 1000.0, "step": 1000.0, "current_step": 2000.0,
		"left": 42.0, "update_time": "2026-11-21T10:00:00.123Z", "description": ""}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("tags[0].%s = %v, want %v", k, first[k], v)
		}
	}
}

func TestCreateTag(t *testing.T) {
	tests := []struct {
		name, body string
		headers    []string
		edit       func(*Config, *Deps)
		wantStart  float64
	}{
		{name: "default start", body: `{"app_tag":"new","step":10}`, headers: adminAuth, wantStart: 1},
		{name: "start and description", body: `{"app_tag":"new","step":10,"start":500,"description":"orders, ✓"}`, headers: adminAuth, wantStart: 500},
		{name: "null start", body: `{"app_tag":"new","step":10,"start":null}`, headers: adminAuth, wantStart: 1},
		{name: "loopback without admin token", body: `{"app_tag":"new","step":10}`,
			headers: []string{"X-Remote-Addr", "127.0.0.1:5000", "Host", "127.0.0.1:8880"}, edit: func(c *Config, _ *Deps) { c.AdminToken = "" }, wantStart: 1},
		{name: "IPv6 loopback", body: `{"app_tag":"new","step":10}`,
			headers: []string{"X-Remote-Addr", "[::1]:5000", "Host", "[::1]:8880"}, edit: func(c *Config, _ *Deps) { c.AdminToken = "" }, wantStart: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, tt.edit)
			got := rg.do(t, "POST", "/tags", tt.body, tt.headers...)
			if got.status != http.StatusCreated || got.code() != 0.0 || got.body["app_tag"] != "new" || got.body["start"] != tt.wantStart {
				t.Fatalf("got %d %s, want 201 for new with start %v", got.status, got.raw, tt.wantStart)
			}
			if got := rg.do(t, "GET", "/alloc?app_tag=new", ""); got.status != 200 {
				t.Errorf("alloc of the new tag: %d %s, want 200", got.status, got.raw)
			}
		})
	}
}

func TestAdminWithoutTokenFromNetwork(t *testing.T) {
	rg := newRig(t, func(c *Config, _ *Deps) { c.AdminToken = "" })
	for _, addr := range []string{"192.0.2.1:1234", "10.0.0.1:80", "[2001:db8::1]:80", "localhost:80"} {
		got := rg.do(t, "POST", "/tags", `{"app_tag":"new","step":10}`, "X-Remote-Addr", addr,
			"Authorization", "Bearer anything")
		if got.status != http.StatusUnauthorized || got.code() != 7.0 {
			t.Errorf("from %s: got %d %s, want 401 resp_code 7", addr, got.status, got.raw)
		}
	}
	if got := rg.seg.list(); len(got) != 0 {
		t.Errorf("segments called: %q, want no calls", got)
	}
	if logs := rg.logs.String(); !strings.Contains(logs, "loopback clients only") {
		t.Errorf("log %s: want the start warning about loopback-only admin calls", logs)
	}
}

func TestAdminToken(t *testing.T) {
	rg := newRig(t, nil)
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"Bearer s3cret-admin-token", http.StatusCreated},
		{"bearer s3cret-admin-token", http.StatusCreated}, // the scheme is case-insensitive
		{"BEARER s3cret-admin-token", http.StatusCreated},
		{"Bearer s3cret-admin-tokeN", http.StatusUnauthorized},
		{"Bearer  s3cret-admin-token", http.StatusUnauthorized},
		{"Basic s3cret-admin-token", http.StatusUnauthorized},
		{"s3cret-admin-token", http.StatusUnauthorized},
		{"", http.StatusUnauthorized},
	} {
		body := fmt.Sprintf(`{"app_tag":"new%d","step":10}`, len(rg.seg.list()))
		got := rg.do(t, "POST", "/tags", body, "Authorization", tc.auth)
		if got.status != tc.want {
			t.Errorf("Authorization %q: got %d %s, want %d", tc.auth, got.status, got.raw, tc.want)
		}
	}
}

func TestHealthHead(t *testing.T) {
	rg := newRig(t, nil)
	// net/http drops the body of an answer to HEAD; the recorder keeps it.
	if got := rg.do(t, "HEAD", "/health", ""); got.status != http.StatusOK || got.body["status"] != "ok" {
		t.Fatalf("HEAD /health: %d %s, want 200 ok", got.status, got.raw)
	}
	if got := rg.do(t, "DELETE", "/health", ""); got.header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("DELETE /health: Allow %q, want \"GET, HEAD\"", got.header.Get("Allow"))
	}
}
