package server

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/idalloc/idalloc/workerlease"
)

func TestWorkerID(t *testing.T) {
	tests := []struct {
		name, method, target, body string
		wantStatus                 int
		want                       string
		wantCall                   string
	}{
		{name: "own lease", method: "GET", target: "/workerid", wantStatus: 200,
			want: `{"resp_code":0,"msg":"success","worker_id":7,"cluster":"default","expires_at":"2026-11-21T10:00:30.123Z","max_worker_id":1023}`},
		{name: "acquire default cluster", method: "POST", target: "/workerid", wantStatus: 201, wantCall: "Acquire ",
			want: `{"resp_code":0,"msg":"success","worker_id":7,"cluster":"default","token":"AAAAAAAAAAAAAAAAAAAAAA","lease_ms":30000,"expires_at":"2026-11-21T10:00:30.123Z","last_timestamp_ms":1700}`},
		{name: "acquire cluster", method: "POST", target: "/workerid", body: `{"cluster":"c-1"}`, wantStatus: 201, wantCall: "Acquire c-1",
			want: `{"resp_code":0,"msg":"success","worker_id":7,"cluster":"default","token":"AAAAAAAAAAAAAAAAAAAAAA","lease_ms":30000,"expires_at":"2026-11-21T10:00:30.123Z","last_timestamp_ms":1700}`},
		{name: "renew", method: "POST", target: "/workerid/renew", wantStatus: 200, wantCall: "Renew c",
			body: `{"worker_id":0,"token":"` + goodToken + `","last_timestamp_ms":1800,"cluster":"c"}`,
			want: `{"resp_code":0,"msg":"success","worker_id":7,"cluster":"default","lease_ms":30000,"expires_at":"2026-11-21T10:00:30.123Z","last_timestamp_ms":1700}`},
		{name: "release", method: "POST", target: "/workerid/release", wantStatus: 200, wantCall: "Release ",
			body: `{"worker_id":1023,"token":"` + goodToken + `"}`, want: `{"resp_code":0,"msg":"success"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.do(t, tt.method, tt.target, tt.body, adminAuth...)
			if got.status != tt.wantStatus || got.raw != tt.want {
				t.Errorf("got %d %s\nwant %d %s", got.status, got.raw, tt.wantStatus, tt.want)
			}
			if calls := rg.leases.list(); tt.wantCall != "" && !slices.Equal(calls, []string{tt.wantCall}) {
				t.Errorf("lease calls = %q, want [%q]", calls, tt.wantCall)
			}
		})
	}
}

func TestWorkerIDLoopbackOnly(t *testing.T) {
	rg := newRig(t, func(c *Config, _ *Deps) { c.AdminToken = "" })
	body := `{"worker_id":7,"token":"` + goodToken + `"}`
	if got := rg.do(t, "POST", "/workerid/release", body, "X-Remote-Addr", "127.0.0.2:9", "Host", "localhost:8880"); got.status != http.StatusOK {
		t.Errorf("from loopback: %d %s, want 200", got.status, got.raw)
	}
	if got := rg.do(t, "POST", "/workerid/release", body, "X-Remote-Addr", "192.0.2.7:9"); got.status != http.StatusUnauthorized {
		t.Errorf("from the network: %d %s, want 401", got.status, got.raw)
	}
}

// TestWorkerIDStoreDown: a lease store that cannot be reached is a retry
// (503, resp_code 3, Retry-After), not an internal error.
func TestWorkerIDStoreDown(t *testing.T) {
	for _, tc := range []struct{ target, body string }{
		{"/workerid", `{"cluster":"c"}`},
		{"/workerid/renew", `{"worker_id":1,"token":"` + goodToken + `"}`},
		{"/workerid/release", `{"worker_id":1,"token":"` + goodToken + `"}`},
	} {
		rg := newRig(t, nil)
		rg.leases.err = fmt.Errorf("%w: dial tcp 127.0.0.1:3306: connection refused", workerlease.ErrUnavailable)
		got := rg.do(t, "POST", tc.target, tc.body, adminAuth...)
		if got.status != http.StatusServiceUnavailable || got.code() != 3.0 || got.header.Get("Retry-After") == "" {
			t.Errorf("POST %s with the store down: %d %s (Retry-After %q), want 503 resp_code 3 with Retry-After",
				tc.target, got.status, got.raw, got.header.Get("Retry-After"))
		}
	}
}
