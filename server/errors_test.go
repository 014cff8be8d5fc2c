package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

const goodToken = "AAAAAAAAAAAAAAAAAAAAAA"

// TestBadInput walks the contract's resp_code table over HTTP, on fakes:
// each bad request gets its JSON answer and HTTP status (Retry-After on 503,
// checked by decodeReply). Its cases are what the server itself refuses
// (absent or malformed parameters, JSON that does not parse or has the
// wrong shape, routes, admin rules), which reach no dependency, and the
// domain's errors injected through the fakes. Input that the domain
// refuses by its rules (tags, steps, starts, clusters, tokens, worker IDs,
// snowflake IDs) is TestBadInputSameWordsAsDomain's, on the real domain.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name           string
		method, target string
		body           string
		headers        []string
		setup          func(*rig)
		wantStatus     int
		wantCode       int
		wantMsg        string // a substring, usually the field's name
		wantUntouched  bool   // no dependency was called
	}{
		// /alloc parameters.
		{name: "missing app_tag", target: "/alloc", wantStatus: 400, wantCode: 1, wantMsg: "missing app_tag", wantUntouched: true},
		{name: "empty app_tag", target: "/alloc?app_tag=", wantStatus: 400, wantCode: 1, wantMsg: "app_tag", wantUntouched: true},
		{name: "other parameter only", target: "/alloc?tag=order", wantStatus: 400, wantCode: 1, wantMsg: "app_tag", wantUntouched: true},
		{name: "app_tag bad escape", target: "/alloc?app_tag=%zz", wantStatus: 400, wantCode: 1, wantMsg: "invalid app_tag: bad percent-encoding", wantUntouched: true},
		{name: "count 0", target: "/alloc?app_tag=order&count=0", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "count -1", target: "/alloc?app_tag=order&count=-1", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "count 1001", target: "/alloc?app_tag=order&count=1001", wantStatus: 400, wantCode: 1, wantMsg: "from 1 to 1000", wantUntouched: true},
		{name: "count abc", target: "/alloc?app_tag=order&count=abc", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "count empty", target: "/alloc?app_tag=order&count=", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "count fraction", target: "/alloc?app_tag=order&count=1.5", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "count plus sign", target: "/alloc?app_tag=order&count=%2B5", wantStatus: 400, wantCode: 1, wantMsg: "without a sign", wantUntouched: true},
		{name: "count raw plus", target: "/alloc?app_tag=order&count=+5", wantStatus: 400, wantCode: 1, wantMsg: "without a sign", wantUntouched: true},
		{name: "count overflow", target: "/alloc?app_tag=order&count=99999999999999999999", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "unknown tag", target: "/alloc?app_tag=nope", wantStatus: 404, wantCode: 2, wantMsg: "unknown app_tag"},
		{name: "unknown tag batch", target: "/alloc?app_tag=nope&count=5", wantStatus: 404, wantCode: 2, wantMsg: "unknown app_tag"},

		// Segment errors from the allocator.
		{name: "store down, nothing buffered", target: "/alloc?app_tag=order", setup: func(r *rig) { r.seg.err = fmt.Errorf("fetch: %w", segment.ErrUnavailable) }, wantStatus: 503, wantCode: 3, wantMsg: "unavailable"},
		{name: "allocator closed", target: "/alloc?app_tag=order", setup: func(r *rig) { r.seg.err = segment.ErrClosed }, wantStatus: 503, wantCode: 3, wantMsg: "draining"},
		{name: "exhausted", target: "/alloc?app_tag=order", setup: func(r *rig) { r.seg.err = segment.ErrExhausted }, wantStatus: 409, wantCode: 10, wantMsg: "exhausted"},
		{name: "unmapped error", target: "/alloc?app_tag=order", setup: func(r *rig) { r.seg.err = errors.New("dial tcp 10.0.0.1:3306: secret detail") }, wantStatus: 500, wantCode: 8, wantMsg: "internal error"},
		{name: "panicking dependency", target: "/alloc?app_tag=order", setup: func(r *rig) { r.seg.panics = true }, wantStatus: 500, wantCode: 8, wantMsg: "internal error"},

		// /health?app_tag.
		{name: "left of unknown tag", target: "/health?app_tag=nope", wantStatus: 404, wantCode: 2, wantMsg: "unknown app_tag"},
		{name: "left of empty tag", target: "/health?app_tag=", wantStatus: 400, wantCode: 1, wantMsg: "app_tag", wantUntouched: true},

		// Routing.
		{name: "unknown route", target: "/nope", wantStatus: 404, wantCode: 2, wantMsg: "unknown route", wantUntouched: true},
		{name: "trailing slash", target: "/alloc/", wantStatus: 404, wantCode: 2, wantMsg: "unknown route", wantUntouched: true},
		{name: "wrong method alloc", method: "POST", target: "/alloc?app_tag=order", wantStatus: 405, wantCode: 9, wantMsg: "method not allowed", wantUntouched: true},
		{name: "wrong method tags", method: "DELETE", target: "/tags", wantStatus: 405, wantCode: 9, wantMsg: "method not allowed", wantUntouched: true},
		{name: "wrong method decompose", method: "PUT", target: "/snowflake/12", wantStatus: 405, wantCode: 9, wantMsg: "method not allowed", wantUntouched: true},
		{name: "decompose empty id", target: "/snowflake/", wantStatus: 404, wantCode: 2, wantMsg: "unknown route", wantUntouched: true},
		{name: "decompose extra segment", target: "/snowflake/12/x", wantStatus: 404, wantCode: 2, wantMsg: "unknown route", wantUntouched: true},

		// POST /tags.
		{name: "tags without token", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10}`, wantStatus: 401, wantCode: 7, wantMsg: "admin token", wantUntouched: true},
		{name: "tags without token from loopback", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10}`, headers: []string{"X-Remote-Addr", "127.0.0.1:9"}, wantStatus: 401, wantCode: 7, wantMsg: "admin token", wantUntouched: true},
		{name: "tags wrong token", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10}`, headers: []string{"Authorization", "Bearer wrong"}, wantStatus: 401, wantCode: 7, wantMsg: "admin token", wantUntouched: true},
		{name: "tags token not bearer", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10}`, headers: []string{"Authorization", "s3cret-admin-token"}, wantStatus: 401, wantCode: 7, wantMsg: "admin token", wantUntouched: true},
		{name: "tags bad JSON", method: "POST", target: "/tags", body: `{"app_tag":`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "body", wantUntouched: true},
		{name: "tags JSON array of a number", method: "POST", target: "/tags", body: `[1]`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "tags[0]: want a JSON object", wantUntouched: true},
		{name: "tags trailing data", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10} x`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "body", wantUntouched: true},
		{name: "tags empty body", method: "POST", target: "/tags", headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "missing app_tag", wantUntouched: true},
		{name: "tags app_tag not string", method: "POST", target: "/tags", body: `{"app_tag":5,"step":10}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "app_tag", wantUntouched: true},
		{name: "tags step missing", method: "POST", target: "/tags", body: `{"app_tag":"new"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "missing step", wantUntouched: true},
		{name: "tags step fraction", method: "POST", target: "/tags", body: `{"app_tag":"new","step":1.5}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid step", wantUntouched: true},
		{name: "tags step string", method: "POST", target: "/tags", body: `{"app_tag":"new","step":"10"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid step", wantUntouched: true},
		// A start sent as 0 is the domain's to refuse (segment.NewTag.Start
		// tells it from one not sent), in the domain's words; the store is
		// never reached (the fake checks with segment.CheckNewTag).
		{name: "tags start 0", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10,"start":0}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid start: must be from 1 to 9223372032559808511"},
		{name: "tags description not string", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10,"description":1}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid description: want a string", wantUntouched: true},
		{name: "tags unknown field", method: "POST", target: "/tags", body: `{"app_tag":"new","stpe":10}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `unknown field "stpe"`, wantUntouched: true},
		{name: "tags duplicate app_tag", method: "POST", target: "/tags", body: `{"app_tag":"order","app_tag":"new","step":10}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `field "app_tag" given twice`, wantUntouched: true},
		{name: "tags duplicate escaped key", method: "POST", target: "/tags", body: `{"app_tag":"order","app\u005ftag":"new","step":10}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `field "app_tag" given twice`, wantUntouched: true},
		{name: "tags duplicate step", method: "POST", target: "/tags", body: `{"step":10,"app_tag":"new","step":20}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `field "step" given twice`, wantUntouched: true},
		{name: "tags hostile unknown field", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10,"<script>":1}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "unknown field", wantUntouched: true},
		{name: "tags body too large", method: "POST", target: "/tags", body: `{"app_tag":"new","step":10,"description":"` + strings.Repeat("x", 70<<10) + `"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "body", wantUntouched: true},
		{name: "tags duplicate", method: "POST", target: "/tags", body: `{"app_tag":"order","step":10}`, headers: adminAuth, wantStatus: 409, wantCode: 10, wantMsg: "already exists"},

		// Snowflake.
		{name: "snowflake disabled", target: "/snowflake", setup: func(r *rig) { r.srv.flake = nil }, wantStatus: 409, wantCode: 5, wantMsg: "not enabled"},
		{name: "snowflake no lease", target: "/snowflake", setup: func(r *rig) { r.flake.err = workerlease.ErrNoWorkerID }, wantStatus: 409, wantCode: 5, wantMsg: "no worker ID"},
		{name: "snowflake count 0", target: "/snowflake?count=0", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "snowflake count 1001", target: "/snowflake?count=1001", wantStatus: 400, wantCode: 1, wantMsg: "count", wantUntouched: true},
		{name: "snowflake count plus sign", target: "/snowflake?count=%2B2", wantStatus: 400, wantCode: 1, wantMsg: "without a sign", wantUntouched: true},
		{name: "snowflake drift try later", target: "/snowflake", setup: func(r *rig) { r.flake.err = fmt.Errorf("behind: %w", snowflake.ErrClockDriftTryLater) }, wantStatus: 503, wantCode: 4, wantMsg: "clock moved backwards"},
		{name: "snowflake drift too large", target: "/snowflake?count=3", setup: func(r *rig) { r.flake.err = snowflake.ErrClockDriftTooLargeToRecover }, wantStatus: 503, wantCode: 4, wantMsg: "clock moved backwards"},
		{name: "snowflake fenced", target: "/snowflake", setup: func(r *rig) { r.flake.err = snowflake.ErrFenced }, wantStatus: 503, wantCode: 3, wantMsg: "lease"},
		{name: "decompose letters", target: "/snowflake/abc", wantStatus: 400, wantCode: 1, wantMsg: "invalid id", wantUntouched: true},
		{name: "decompose plus sign", target: "/snowflake/+5", wantStatus: 400, wantCode: 1, wantMsg: "without '+'", wantUntouched: true},
		{name: "decompose overflow", target: "/snowflake/9223372036854775808", wantStatus: 400, wantCode: 1, wantMsg: "invalid id", wantUntouched: true},
		{name: "decompose disabled", target: "/snowflake/1", setup: func(r *rig) { r.srv.flake = nil }, wantStatus: 409, wantCode: 5, wantMsg: "not enabled"},

		// Worker IDs.
		{name: "own lease none yet", target: "/workerid", setup: func(r *rig) {
			r.own.held, r.own.wait = false, workerlease.Wait{Reason: workerlease.WaitAcquiring, For: time.Second}
		}, wantStatus: 503, wantCode: 3, wantMsg: "taking a worker lease"},
		{name: "own lease none free", target: "/workerid", setup: func(r *rig) {
			r.own.held, r.own.wait = false, workerlease.Wait{Reason: workerlease.WaitNoFree, For: time.Second}
		}, wantStatus: 409, wantCode: 5, wantMsg: "no worker ID"},
		{name: "acquire without token", method: "POST", target: "/workerid", wantStatus: 401, wantCode: 7, wantUntouched: true},
		{name: "acquire none free", method: "POST", target: "/workerid", headers: adminAuth, setup: func(r *rig) { r.leases.err = workerlease.ErrNoWorkerID }, wantStatus: 409, wantCode: 5, wantMsg: "no worker ID"},
		{name: "acquire empty cluster", method: "POST", target: "/workerid", body: `{"cluster":""}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid cluster: want 1 to 64", wantUntouched: true},
		{name: "acquire cluster not string", method: "POST", target: "/workerid", body: `{"cluster":1}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "cluster", wantUntouched: true},
		{name: "acquire not JSON", method: "POST", target: "/workerid", body: `cluster=c`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "body", wantUntouched: true},
		{name: "acquire duplicate cluster", method: "POST", target: "/workerid", body: `{"cluster":"a","cluster":"b"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `field "cluster" given twice`, wantUntouched: true},
		{name: "acquire disabled", method: "POST", target: "/workerid", headers: adminAuth, setup: func(r *rig) { r.srv.leases = nil }, wantStatus: 409, wantCode: 5, wantMsg: "not enabled"},
		{name: "renew without token", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":"` + goodToken + `"}`, wantStatus: 401, wantCode: 7, wantUntouched: true},
		{name: "renew not JSON", method: "POST", target: "/workerid/renew", body: `worker_id=7`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "body", wantUntouched: true},
		{name: "renew missing worker_id", method: "POST", target: "/workerid/renew", body: `{"token":"` + goodToken + `"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "missing worker_id", wantUntouched: true},
		{name: "renew null worker_id", method: "POST", target: "/workerid/renew", body: `{"worker_id":null,"token":"` + goodToken + `"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "missing worker_id", wantUntouched: true},
		{name: "renew worker_id string", method: "POST", target: "/workerid/renew", body: `{"worker_id":"7","token":"` + goodToken + `"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid worker_id", wantUntouched: true},
		{name: "renew token not string", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":5}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid token: want a string", wantUntouched: true},
		{name: "renew timestamp not integer", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":"` + goodToken + `","last_timestamp_ms":"5"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "invalid last_timestamp_ms: want an integer", wantUntouched: true},
		{name: "renew missing token", method: "POST", target: "/workerid/renew", body: `{"worker_id":7}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "missing token", wantUntouched: true},
		{name: "renew unknown field", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":"` + goodToken + `","last_timestamp":5}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `unknown field "last_timestamp"`, wantUntouched: true},
		{name: "renew duplicate worker_id", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":"` + goodToken + `","worker_id":8}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `field "worker_id" given twice`, wantUntouched: true},
		{name: "renew duplicate last_timestamp_ms", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":"` + goodToken + `","last_timestamp_ms":1,"last_timestamp_ms":2}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `field "last_timestamp_ms" given twice`, wantUntouched: true},
		{name: "renew token mismatch", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":"` + goodToken + `"}`, headers: adminAuth, setup: func(r *rig) { r.leases.err = workerlease.ErrTokenMismatch }, wantStatus: 409, wantCode: 6, wantMsg: "another token"},
		{name: "renew expired", method: "POST", target: "/workerid/renew", body: `{"worker_id":7,"token":"` + goodToken + `"}`, headers: adminAuth, setup: func(r *rig) { r.leases.err = fmt.Errorf("renew: %w", workerlease.ErrLeaseExpired) }, wantStatus: 409, wantCode: 6, wantMsg: "expired"},
		{name: "release not assigned", method: "POST", target: "/workerid/release", body: `{"worker_id":7,"token":"` + goodToken + `"}`, headers: adminAuth, setup: func(r *rig) { r.leases.err = workerlease.ErrNotAssigned }, wantStatus: 409, wantCode: 6, wantMsg: "not assigned"},
		{name: "release missing worker_id", method: "POST", target: "/workerid/release", body: `{"token":"` + goodToken + `"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "missing worker_id", wantUntouched: true},
		{name: "release duplicate token", method: "POST", target: "/workerid/release", body: `{"worker_id":7,"token":"` + goodToken + `","token":"BBBBBBBBBBBBBBBBBBBBBB"}`, headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: `field "token" given twice`, wantUntouched: true},
		{name: "release empty body", method: "POST", target: "/workerid/release", headers: adminAuth, wantStatus: 400, wantCode: 1, wantMsg: "missing worker_id", wantUntouched: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			if tt.setup != nil {
				tt.setup(rg)
			}
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			got := rg.do(t, method, tt.target, tt.body, tt.headers...)
			if got.status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", got.status, tt.wantStatus, got.raw)
			}
			if got.code() != float64(tt.wantCode) {
				t.Errorf("resp_code = %v, want %d (body %s)", got.code(), tt.wantCode, got.raw)
			}
			if msg, _ := got.body["msg"].(string); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("msg = %q, want it to contain %q", msg, tt.wantMsg)
			}
			if got.header.Get(requestIDHeader) == "" {
				t.Errorf("no %s header on an error", requestIDHeader)
			}
			if tt.wantUntouched {
				for name, c := range map[string]*calls{"segments": &rg.seg.calls, "snowflake": &rg.flake.calls, "leases": &rg.leases.calls} {
					if got := c.list(); len(got) != 0 {
						t.Errorf("%s called with invalid input: %q, want no calls", name, got)
					}
				}
			}
		})
	}
}

// TestInternalError checks that an unmapped error or a panic answers a fixed
// message with a request ID, and that the log, not the client, gets the real
// cause under the same ID.
func TestInternalError(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*rig)
		secret  string
		headers []string
		wantRID string // "" means generated
	}{
		{name: "unmapped error", setup: func(r *rig) { r.seg.err = errors.New("secret detail") }, secret: "secret detail"},
		{name: "panic", setup: func(r *rig) { r.seg.panics = true }, secret: "hunter2"},
		{name: "caller's request ID", setup: func(r *rig) { r.seg.panics = true }, secret: "hunter2",
			headers: []string{requestIDHeader, "trace-1234"}, wantRID: "trace-1234"},
		{name: "hostile request ID replaced", setup: func(r *rig) { r.seg.err = errors.New("secret detail") }, secret: "secret detail",
			headers: []string{requestIDHeader, `x"}{evil`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			tt.setup(rg)
			got := rg.do(t, "GET", "/alloc?app_tag=order", "", tt.headers...)
			if got.status != 500 || got.code() != float64(codeInternal) || got.body["msg"] != "internal error" {
				t.Fatalf("got %d %s, want 500 resp_code 8 \"internal error\"", got.status, got.raw)
			}
			if strings.Contains(got.raw, tt.secret) || strings.Contains(got.raw, "goroutine") {
				t.Errorf("body %s leaks the error", got.raw)
			}
			rid, _ := got.body["request_id"].(string)
			if rid == "" || got.header.Get(requestIDHeader) != rid {
				t.Fatalf("request_id %q, header %q: want equal and non-empty", rid, got.header.Get(requestIDHeader))
			}
			if tt.wantRID != "" && rid != tt.wantRID {
				t.Errorf("request_id = %q, want %q", rid, tt.wantRID)
			}
			logs := rg.logs.String()
			if !strings.Contains(logs, `"request_id":"`+rid+`"`) || !strings.Contains(logs, tt.secret) {
				t.Errorf("log %s: want the cause %q under request_id %q", logs, tt.secret, rid)
			}
		})
	}
}

// TestErrorTable pins each sentinel's answer, wrapped as the domain
// packages wrap them, and that the message is the domain error's own.
func TestErrorTable(t *testing.T) {
	tests := []struct {
		err                  error
		wantCode, wantStatus int
	}{
		{segment.ErrInvalidTag, 1, 400},
		{segment.ErrInvalidStep, 1, 400},
		{segment.ErrInvalidStart, 1, 400},
		{segment.ErrInvalidDescription, 1, 400},
		{segment.ErrUnknownTag, 2, 404},
		{segment.ErrUnavailable, 3, 503},
		{segment.ErrClosed, 3, 503},
		{segment.ErrExhausted, 10, 409},
		{segment.ErrTagExists, 10, 409},
		{snowflake.ErrInvalidID, 1, 400},
		{snowflake.ErrClockDriftTryLater, 4, 503},
		{snowflake.ErrClockDriftTooLargeToRecover, 4, 503},
		{snowflake.ErrFenced, 3, 503},
		{workerlease.ErrNoWorkerID, 5, 409},
		{workerlease.ErrUnavailable, 3, 503},
		{workerlease.ErrTokenMismatch, 6, 409},
		{workerlease.ErrLeaseExpired, 6, 409},
		{workerlease.ErrNotAssigned, 6, 409},
		{workerlease.ErrInvalidWorkerID, 1, 400},
		{workerlease.ErrInvalidToken, 1, 400},
		{workerlease.ErrInvalidCluster, 1, 400},
		{workerlease.ErrInvalidTimestamp, 1, 400},
		{segment.ErrRewound, 8, 500},
		{snowflake.ErrTimeExhausted, 8, 500},
		{errors.New("anything else"), 8, 500},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			got := classify(fmt.Errorf("context: %w", tt.err))
			if got.code != tt.wantCode || got.status != tt.wantStatus {
				t.Errorf("classify = %d/%d, want %d/%d", got.code, got.status, tt.wantCode, tt.wantStatus)
			}
			if tt.wantCode != codeInternal && got.msg != tt.err.Error() {
				t.Errorf("msg = %q, want the domain's %q", got.msg, tt.err.Error())
			}
		})
	}
}

// TestKindTable: every kind of the vocabulary (errs.Kinds, docs/api.md §2) has
// the contract's resp_code and status, and goes out on the wire as its
// kind with its field; an unknown kind is an internal error.
func TestKindTable(t *testing.T) {
	want := map[errs.Kind][2]int{
		errs.BadRequest: {1, 400}, errs.UnknownTag: {2, 404}, errs.UnknownRoute: {2, 404},
		errs.Unavailable: {3, 503}, errs.Draining: {3, 503}, errs.ClockBackwards: {4, 503},
		errs.NoWorkerID: {5, 409}, errs.TokenMismatch: {6, 409}, errs.LeaseExpired: {6, 409},
		errs.NotAssigned: {6, 409}, errs.Unauthorized: {7, 401}, errs.Forbidden: {7, 403},
		errs.Internal: {8, 500}, errs.MethodNotAllowed: {9, 405}, errs.Exists: {10, 409},
		errs.Exhausted: {10, 409}, errs.PeriodExhausted: {10, 409}, // §11: resp_code 10; §2: that is 409
	}
	for _, kind := range errs.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			w, ok := want[kind]
			if !ok {
				t.Fatalf("kind %q has no answer in this test", kind)
			}
			err := fmt.Errorf("wrapped: %w", errs.E(kind, "f", "r", nil))
			got := classify(err)
			if got.code != w[0] || got.status != w[1] {
				t.Errorf("classify = %d/%d, want %d/%d", got.code, got.status, w[0], w[1])
			}
			if kind == errs.Internal {
				if got.msg != "internal error" || got.field != "" {
					t.Errorf("internal: msg %q field %q, want \"internal error\" and none", got.msg, got.field)
				}
				return
			}
			if got.kind != kind || got.field != "f" || got.msg != errs.E(kind, "f", "r", nil).Error() {
				t.Errorf("classify = %+v, want kind %q, field f and the error's own words", got, kind)
			}
		})
	}
	if got := classify(errs.E("no_such_kind", "", "r", nil)); got.code != codeInternal || got.msg != "internal error" {
		t.Errorf("an unknown kind: %+v, want an internal error", got)
	}
}
