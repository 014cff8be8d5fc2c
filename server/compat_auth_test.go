package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/store/storetest"
)

// TestCompatRoutesNeedTokens: with alloc_auth on, Leaf's and Tinyid's ID
// routes refuse a call without a token (401) or with another tag's (403),
// taking nothing, and serve one allowed the tag, in a Bearer header or
// Tinyid's token= (in the query or a form body), as Tinyid's client sends it.
func TestCompatRoutesNeedTokens(t *testing.T) {
	rg := newAuthRig(t, storetest.SQLite().NewDB(t), true, 0)
	rg.mustTag(t, "order")
	orders := rg.mustToken(t, "orders-svc", "order")
	invoices := rg.mustToken(t, "invoices-svc", "invoice")
	send := func(method, target string, headers ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		w := httptest.NewRecorder()
		rg.srv.Handler().ServeHTTP(w, req)
		return w
	}
	routes := []struct{ method, target string }{
		{"GET", "/api/segment/get/order"},
		{"GET", "/api/snowflake/get/order"},
		{"GET", "/tinyid/id/nextId?bizType=order&batchSize=2"},
		{"GET", "/tinyid/id/nextIdSimple?bizType=order"},
		{"POST", "/tinyid/id/nextSegmentId?bizType=order"},
		{"POST", "/tinyid/id/nextSegmentIdSimple?bizType=order"},
	}
	for _, rt := range routes {
		if w := send(rt.method, rt.target); w.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d %s, want 401", rt.method, rt.target, w.Code, w.Body)
		}
		if strings.Contains(rt.target, "snowflake") {
			continue // any valid token takes snowflake IDs
		}
		if w := send(rt.method, rt.target, withToken(invoices)...); w.Code != http.StatusForbidden {
			t.Errorf("%s %s with another tag's token: %d %s, want 403", rt.method, rt.target, w.Code, w.Body)
		}
	}
	// Nothing was taken: the tag's first ID is the first allowed call's.
	if w := send("GET", "/api/segment/get/order", withToken(orders)...); w.Code != 200 || w.Body.String() != "1" {
		t.Fatalf("Leaf's route with the tag's token: %d %q, want 200 \"1\"", w.Code, w.Body)
	}
	for _, rt := range routes {
		sep := "&"
		if !strings.Contains(rt.target, "?") {
			sep = "?"
		}
		if w := send(rt.method, rt.target+sep+"token="+orders); w.Code != 200 {
			t.Errorf("%s %s with token=: %d %s, want 200", rt.method, rt.target, w.Code, w.Body)
		}
	}
	// Tinyid's routes read every parameter from a form body too, token=
	// included: allowed the tag, served; another tag's, refused.
	for _, route := range []string{"/tinyid/id/nextId", "/tinyid/id/nextIdSimple", "/tinyid/id/nextSegmentId", "/tinyid/id/nextSegmentIdSimple"} {
		for _, c := range []struct {
			token string
			want  int
		}{{orders, 200}, {invoices, http.StatusForbidden}, {"", http.StatusUnauthorized}} {
			req := httptest.NewRequest("POST", route, strings.NewReader("bizType=order&token="+c.token))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			w := httptest.NewRecorder()
			rg.srv.Handler().ServeHTTP(w, req)
			if w.Code != c.want {
				t.Errorf("POST %s with token=%q in a form body: %d %s, want %d", route, c.token, w.Code, w.Body, c.want)
			}
		}
	}
}
