package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// realServer serves on a real store of d, with the real allocator and lease
// service, so "changes nothing" can be checked in the database itself.
func realServer(tb testing.TB, st store.Store) http.Handler {
	tb.Helper()
	ctx := context.Background()
	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = alloc.Close(ctx) })
	svc, err := workerlease.NewService(st, workerlease.Config{MaxWorkerID: 7})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(Config{AdminToken: "s3cret"}, Deps{Segments: alloc, Store: st, Leases: svc})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s.Handler()
}

// contractStatus is the contract's HTTP status for each resp_code.
var contractStatus = map[int]int{0: 200, 1: 400, 2: 404, 3: 503, 4: 503, 5: 409, 6: 409, 7: 401, 8: 500, 9: 405, 10: 409}

// checkEnvelope fails unless rec is a JSON envelope whose status matches its
// resp_code; it returns the resp_code.
func checkEnvelope(tb testing.TB, what string, rec *httptest.ResponseRecorder) int {
	tb.Helper()
	var env struct {
		RespCode *int    `json:"resp_code"`
		Msg      *string `json:"msg"`
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Fatalf("%s: Content-Type %q, want application/json", what, ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.RespCode == nil || env.Msg == nil || *env.Msg == "" {
		tb.Fatalf("%s: body %q is not an envelope (%v)", what, rec.Body.String(), err)
	}
	code := *env.RespCode
	want, known := contractStatus[code]
	if !known || (rec.Code != want && !(code == 0 && rec.Code == 201)) {
		tb.Fatalf("%s: HTTP %d with resp_code %d, want the contract's pairing", what, rec.Code, code)
	}
	if rec.Code == 503 && rec.Header().Get("Retry-After") == "" {
		tb.Fatalf("%s: 503 without Retry-After", what)
	}
	if code == 8 && strings.Contains(rec.Body.String(), "panic") {
		tb.Fatalf("%s: internal error leaks %q", what, rec.Body.String())
	}
	return code
}

func serve(h http.Handler, method, target, body, remote, auth string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.RemoteAddr = remote
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

const (
	loopback = "127.0.0.1:5555"
	remote   = "192.0.2.10:5555" // TEST-NET-1: never on the wire, requests stay in process
	bearer   = "Bearer s3cret"
	goodTok  = "AAAAAAAAAAAAAAAAAAAAAA"
)

func TestBadInputChangesNothingOnEachDriver(t *testing.T) {
	cases := []struct {
		method, target, body, remote, auth string
		want                               int
	}{
		{"GET", "/alloc", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=" + strings.Repeat("a", 65), "", loopback, "", 1},
		{"GET", "/alloc?app_tag=a%20b", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=x%27%3B+DROP+TABLE+segments%3B--", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=%ZZ", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=0", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=-1", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=1001", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=abc", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=5&count=2000", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&app_tag=test_business", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=007", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=0x10", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=test_business&count=%2B5", "", loopback, "", 1},
		{"GET", "/alloc?app_tag=nope", "", loopback, "", 2},
		{"GET", "/health?app_tag=nope", "", loopback, "", 2},
		{"GET", "/no/such/route", "", loopback, "", 2},
		{"DELETE", "/alloc?app_tag=test_business", "", loopback, "", 9},
		{"POST", "/tags", `{"app_tag":"t1","step":10}`, remote, "", 7},
		{"POST", "/tags", `{"app_tag":"t1","step":10}`, remote, "Bearer wrong", 7},
		{"POST", "/tags", `{"app_tag":"t1","step":10`, loopback, bearer, 1},
		{"POST", "/tags", `{"app_tag":"t1","step":0}`, loopback, bearer, 1},
		{"POST", "/tags", `{"app_tag":"t1","step":10,"start":-3}`, loopback, bearer, 1},
		{"POST", "/tags", `{"app_tag":"t1","step":10,"start":9223372036854775807}`, loopback, bearer, 1},
		{"POST", "/tags", `{"app_tag":"bad tag","step":10}`, loopback, bearer, 1},
		{"POST", "/tags", `{"app_tag":"t1","step":10,"extra":1}`, loopback, bearer, 1},
		{"POST", "/tags", `{"app_tag":"test_business","step":10}`, loopback, bearer, 10},
		{"PATCH", "/tags/test_business", `{"step":10}`, remote, "", 7},
		{"PATCH", "/tags/nope", `{"step":10}`, loopback, bearer, 2},
		{"PATCH", "/tags/bad%20tag", `{"step":10}`, loopback, bearer, 1},
		{"PATCH", "/tags/test_business", `{}`, loopback, bearer, 1},
		{"PATCH", "/tags/test_business", `{"step":0}`, loopback, bearer, 1},
		{"PATCH", "/tags/test_business", `{"step":10,"format":"scrambled"}`, loopback, bearer, 1},
		{"PATCH", "/tags/test_business", `{"max_id":0}`, loopback, bearer, 1},
		{"GET", "/tags/test_business", "", loopback, bearer, 9},
		{"POST", "/workerid", `{"cluster":"c"}`, remote, "", 7},
		{"POST", "/workerid", `not json`, loopback, bearer, 1},
		{"POST", "/workerid", `{"cluster":"a b"}`, loopback, bearer, 1},
		{"POST", "/workerid/renew", `{"token":"` + goodTok + `"}`, loopback, bearer, 1},
		{"POST", "/workerid/renew", `{"worker_id":-1,"token":"` + goodTok + `"}`, loopback, bearer, 1},
		{"POST", "/workerid/renew", `{"worker_id":8,"token":"` + goodTok + `"}`, loopback, bearer, 1},
		{"POST", "/workerid/renew", `{"worker_id":1,"token":"short"}`, loopback, bearer, 1},
		{"POST", "/workerid/renew", `{"worker_id":1,"token":"` + goodTok + `"}`, loopback, bearer, 6},
		{"POST", "/workerid/release", `{"worker_id":1,"token":"` + goodTok + `"}`, loopback, bearer, 6},
		{"GET", "/snowflake", "", loopback, "", 5},
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st := d.Open(t)
			h := realServer(t, st)
			for _, c := range cases {
				what := c.method + " " + c.target + " " + c.body
				if got := checkEnvelope(t, what, serve(h, c.method, c.target, c.body, c.remote, c.auth)); got != c.want {
					t.Errorf("%s: resp_code got %d, want %d", what, got, c.want)
				}
			}
			tags, err := st.Tags(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(tags) != 1 || tags[0].AppTag != "test_business" || tags[0].MaxID != 0 || tags[0].Step != 100000 {
				t.Fatalf("after bad input the segments table holds %+v, want only test_business at max_id 0, step 100000", tags)
			}
			leases, err := st.(interface {
				LeaseTimestamps(context.Context) ([]store.LeaseTimestamp, error)
			}).LeaseTimestamps(context.Background())
			if err != nil || len(leases) != 0 {
				t.Fatalf("after bad input worker_leases holds %+v (%v), want no rows", leases, err)
			}
		})
	}
}

// FuzzRequests sends arbitrary methods, paths, queries and bodies: every
// answer is an envelope inside the contract, and nothing panics.
func FuzzRequests(f *testing.F) {
	seeds := []struct{ method, target, body string }{
		{"GET", "/alloc?app_tag=test_business", ""},
		{"GET", "/alloc?app_tag=test_business&count=3", ""},
		{"GET", "/alloc?app_tag=%41%42&count=%31", ""},
		{"GET", "/health?app_tag=test_business", ""},
		{"GET", "/tags", ""},
		{"POST", "/tags", `{"app_tag":"fz","step":5,"start":9}`},
		{"POST", "/tags", `{"app_tag":"fz","step":1e3}`},
		{"POST", "/workerid", `{"cluster":"fz"}`},
		{"POST", "/workerid/renew", `{"worker_id":0,"token":"` + goodTok + `","last_timestamp_ms":5}`},
		{"POST", "/workerid/release", `{"worker_id":0,"token":"` + goodTok + `"}`},
		{"GET", "/snowflake/123456789", ""},
		{"PUT", "/tags", "{}"},
		{"PATCH", "/tags/test_business", `{"step":5,"description":"fz"}`},
		{"GET", "/api/segment/get/test_business", ""},
		{"POST", "/tinyid/id/nextId?bizType=test_business", "batchSize=3"},
		{"GET", "/tinyid/id/nextSegmentIdSimple?bizType=test_business", ""},
		{"GET", "/decodeSnowflakeId?snowflakeId=123456789", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.body)
	}
	st := storetest.SQLite().Open(f)
	h := realServer(f, st)
	f.Fuzz(func(t *testing.T, method, target, body string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \t\r\n#") {
			return
		}
		switch method {
		case "GET", "POST", "PUT", "DELETE", "PATCH":
		default:
			return
		}
		if strings.HasPrefix(target, "/metrics") {
			return // Prometheus text, not an envelope
		}
		r, err := http.NewRequest(method, "http://idalloc"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		r.RemoteAddr = loopback
		r.Header.Set("Authorization", bearer)
		if method == "POST" {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded") // read by Leaf's and Tinyid's routes
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		switch r.URL.Path {
		case "/", "/monitor.js", "/decode.js", "/monitor.css":
			if method == "GET" {
				return // the monitor page's assets, not envelopes
			}
		}
		if compatPath(r.URL.Path) {
			checkCompatAnswer(t, method+" "+target+" "+body, rec)
			return
		}
		checkEnvelope(t, method+" "+target+" "+body, rec)
	})
}

// compatPath reports whether path is one of Leaf's or Tinyid's, whose
// answers are in their shapes, not in the envelope.
func compatPath(path string) bool {
	for _, p := range []string{"/api/segment/get/", "/api/snowflake/", "/decodeSnowflakeId", "/tinyid/id/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// checkCompatAnswer fails unless rec, an answer of a Leaf or Tinyid route
// (or idalloc's to a method or path they do not have), has one of the
// contract's statuses, Retry-After on a 503 and no panic's text.
func checkCompatAnswer(tb testing.TB, what string, rec *httptest.ResponseRecorder) {
	tb.Helper()
	known := false
	for _, st := range contractStatus {
		known = known || rec.Code == st
	}
	switch {
	case !known:
		tb.Fatalf("%s: HTTP %d, not a status of the contract", what, rec.Code)
	case rec.Code == 503 && rec.Header().Get("Retry-After") == "":
		tb.Fatalf("%s: 503 without Retry-After", what)
	case strings.Contains(rec.Body.String(), "panic"):
		tb.Fatalf("%s: answer leaks %q", what, rec.Body.String())
	}
}
