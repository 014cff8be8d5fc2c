package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// compatCase is one request to a Leaf or Tinyid route (docs/api.md §12) and
// its answer, byte for byte.
type compatCase struct {
	name   string
	method string // GET when empty
	target string
	form   string // a POST's form-encoded body
	rid    string // the X-Request-Id sent, if any
	edit   func(*Config, *Deps)
	setup  func(*rig)
	status int
	ct     string // the Content-Type
	body   string
	// untouched: the request is refused before any dependency is asked.
	untouched bool
}

const (
	springTextCT = "text/plain;charset=UTF-8"
	springJSONCT = "application/json;charset=UTF-8"
)

// runCompat serves each case on a fresh rig (tags "order" and
// "test_business"; the fake allocator counts from 1, the fake snowflake
// source from 2^40+1) and compares the answer with it. Every error carries
// X-Request-Id, and every 503 Retry-After, as on every route.
func runCompat(t *testing.T, cases []compatCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t, c.edit)
			if c.setup != nil {
				c.setup(rg)
			}
			rec := compatDo(rg.srv.Handler(), c.method, c.target, c.form, "X-Request-Id", c.rid)
			if rec.Code != c.status || rec.Body.String() != c.body {
				t.Errorf("%s %s: got %d %q, want %d %q", c.method, c.target, rec.Code, rec.Body, c.status, c.body)
			}
			h := rec.Header()
			if got := h.Get("Content-Type"); got != c.ct {
				t.Errorf("Content-Type: got %q, want %q", got, c.ct)
			}
			if got := h.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			if c.status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if c.status != http.StatusOK && h.Get("X-Request-Id") == "" {
				t.Error("error without X-Request-Id")
			}
			if calls := append(rg.seg.list(), rg.flake.list()...); c.untouched && len(calls) > 0 {
				t.Errorf("refused request reached %v", calls)
			}
		})
	}
}

// compatDo serves one request, GET when method is empty; a POST's body is
// form-encoded, as Java's HttpURLConnection sends it. Headers come in
// name, value pairs; an empty value sends none.
func compatDo(h http.Handler, method, target, form string, headers ...string) *httptest.ResponseRecorder {
	if method == "" {
		method = http.MethodGet
	}
	req := httptest.NewRequest(method, target, strings.NewReader(form))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestCompatMetricsLabels: each compatible route is counted under its
// route pattern, as every route of the table is, and not under the path a
// client sent.
func TestCompatMetricsLabels(t *testing.T) {
	rg := newRig(t, nil)
	for _, target := range []string{
		"/api/segment/get/order", "/api/segment/get/nope", "/api/snowflake/get/x",
		"/api/snowflake/decode?snowflakeId=1", "/decodeSnowflakeId?snowflakeId=1",
		"/tinyid/id/nextId?bizType=order", "/tinyid/id/nextIdSimple?bizType=order",
	} {
		compatDo(rg.srv.Handler(), "", target, "")
	}
	scrape := rg.do(t, "GET", "/metrics", "", adminAuth...).raw
	for _, want := range []string{
		`idalloc_http_requests_total{code="200",route="/api/segment/get/{key}"} 1`,
		`idalloc_http_requests_total{code="404",route="/api/segment/get/{key}"} 1`,
		`idalloc_http_requests_total{code="200",route="/api/snowflake/get/{key}"} 1`,
		`idalloc_http_requests_total{code="200",route="/api/snowflake/decode"} 1`,
		`idalloc_http_requests_total{code="200",route="/decodeSnowflakeId"} 1`,
		`idalloc_http_requests_total{code="200",route="/tinyid/id/nextId"} 1`,
		`idalloc_http_requests_total{code="200",route="/tinyid/id/nextIdSimple"} 1`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(scrape, `route="/api/segment/get/order"`) {
		t.Error("a raw path became a route label")
	}
}

// TestCompatMethods: Leaf's and Tinyid's controllers map their routes
// without a method; GET and POST are served, another method is 405 with
// Allow, in idalloc's envelope.
func TestCompatMethods(t *testing.T) {
	rg := newRig(t, nil)
	for _, target := range []string{"/api/segment/get/order", "/api/snowflake/get/x", "/tinyid/id/nextIdSimple?bizType=order"} {
		if rec := compatDo(rg.srv.Handler(), http.MethodPost, target, ""); rec.Code != http.StatusOK {
			t.Errorf("POST %s: got %d %q, want 200", target, rec.Code, rec.Body)
		}
		got := rg.do(t, http.MethodPut, target, "")
		if got.status != http.StatusMethodNotAllowed || got.header.Get("Allow") != "GET, POST" {
			t.Errorf("PUT %s: got %d Allow %q, want 405 Allow \"GET, POST\"", target, got.status, got.header.Get("Allow"))
		}
	}
}
