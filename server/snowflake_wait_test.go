package server

import (
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// TestSnowflakeWaitAnswers: until the instance holds a lease whose fence
// is open, /health (200, status ok) carries why and snowflake_wait_ms, and
// /snowflake and GET /workerid answer resp_code 3 with Retry-After, in
// words that say why and about how long; resp_code 5 only when the keeper
// found every worker ID held (docs/api.md §2).
func TestSnowflakeWaitAnswers(t *testing.T) {
	for _, tt := range []struct {
		name       string
		wait       workerlease.Wait
		held       bool
		status     int
		code       float64
		retryAfter string
	}{
		{"starting", workerlease.Wait{Reason: workerlease.WaitAcquiring, For: time.Second}, false, 503, 3, "1"},
		{"retrying", workerlease.Wait{Reason: workerlease.WaitRetrying, For: 1500 * time.Millisecond}, false, 503, 3, "2"},
		{"no history", workerlease.Wait{Reason: workerlease.WaitNoHistory, For: 3200 * time.Millisecond}, true, 503, 3, "4"},
		{"renewal overdue", workerlease.Wait{Reason: workerlease.WaitRenewing, For: time.Second}, false, 503, 3, "1"},
		{"cluster full", workerlease.Wait{Reason: workerlease.WaitNoFree, For: 2 * time.Second}, false, 409, 5, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			rg.own.held, rg.own.wait = tt.held, tt.wait
			rg.flake.err = tt.wait.Err() // as leased.Source answers
			h := rg.do(t, "GET", "/health", "")
			if h.status != 200 || h.body["status"] != "ok" || h.body["snowflake"] != tt.wait.Reason ||
				h.body["snowflake_wait_ms"] != float64(tt.wait.For.Milliseconds()) {
				t.Errorf("/health: %d %s, want 200 ok with snowflake %q, snowflake_wait_ms %d",
					h.status, h.raw, tt.wait.Reason, tt.wait.For.Milliseconds())
			}
			for _, target := range []string{"/snowflake", "/snowflake?count=3", "/workerid"} {
				got := rg.do(t, "GET", target, "")
				msg, _ := got.body["msg"].(string)
				if got.status != tt.status || got.code() != tt.code || got.header.Get("Retry-After") != tt.retryAfter {
					t.Errorf("%s: %d %s, Retry-After %q; want %d resp_code %v, Retry-After %q",
						target, got.status, got.raw, got.header.Get("Retry-After"), tt.status, tt.code, tt.retryAfter)
				}
				if tt.code == 3 && (got.body["kind"] != "unavailable" || !strings.Contains(msg, tt.wait.Reason+"; retry in about ")) {
					t.Errorf("%s: %s, want kind unavailable and words saying why and how long", target, got.raw)
				}
			}
		})
	}
}
