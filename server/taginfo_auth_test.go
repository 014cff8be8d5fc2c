package server

import (
	"net/http"
	"testing"

	"github.com/idalloc/idalloc/store/storetest"
)

// TestTagInfoNeedsToken: with alloc_auth on, /health?app_tag= answers
// only a token allowed the tag, or the admin token (docs/api.md §15); without
// one it is refused as an ID call is, and an unknown tag is refused
// exactly as a forbidden one: the same status and the same bytes.
func TestTagInfoNeedsToken(t *testing.T) {
	rg := newAuthRig(t, storetest.SQLite().NewDB(t), true, 0)
	rg.mustTag(t, "order")
	orders := rg.mustToken(t, "orders-svc", "order")
	invoices := rg.mustToken(t, "invoices-svc", "invoice")

	same := func(name string, a, b reply, status int, kind string) {
		t.Helper()
		if a.status != status || a.body["kind"] != kind || a.status != b.status || a.raw != b.raw {
			t.Errorf("%s: %d %s and %d %s; want both %d kind %s, byte for byte", name, a.status, a.raw, b.status, b.raw, status, kind)
		}
	}
	for _, c := range []struct {
		name    string
		headers []string
		query   string
		status  int
		kind    string
	}{
		{"no token", nil, "", 401, "unauthorized"},
		{"an unknown token", withToken("0f673adf80504e2eaa552f5d791b644c"), "", 401, "unauthorized"},
		{"another tag's token", withToken(invoices), "", 403, "forbidden"},
		{"another tag's token in token=", nil, "&token=" + invoices, 403, "forbidden"},
	} {
		known := rg.do(t, "GET", "/health?app_tag=order"+c.query, "", c.headers...)
		unknown := rg.do(t, "GET", "/health?app_tag=nope"+c.query, "", c.headers...)
		same(c.name, known, unknown, c.status, c.kind)
	}
	for _, c := range []struct {
		name, target string
		headers      []string
		status       int
	}{
		{"the tag's token", "/health?app_tag=order", withToken(orders), 200},
		{"the tag's token in token=", "/health?app_tag=order&token=" + orders, nil, 200},
		{"the admin token", "/health?app_tag=order", adminAuth, 200},
		{"the admin token, an unknown tag", "/health?app_tag=nope", adminAuth, 404},
		{"a token allowed a tag not made yet", "/health?app_tag=invoice", withToken(invoices), 404},
		{"an invalid tag", "/health?app_tag=a%20b", adminAuth, 400},
	} {
		if got := rg.do(t, "GET", c.target, "", c.headers...); got.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, got.status, got.raw, c.status)
		}
	}
}

// TestTagListsNeedAdminWithAllocAuth: GET /tags, /status and /metrics list
// every tag and its figures. Without an admin token they are open, unless
// alloc_auth is on: then they are admin calls (loopback), as with one.
func TestTagListsNeedAdminWithAllocAuth(t *testing.T) {
	for _, allocAuth := range []bool{false, true} {
		rg := newAuthRigConfig(t, storetest.SQLite().NewDB(t), Config{AllocAuth: allocAuth}, 0)
		for _, target := range []string{"/tags", "/status", "/metrics"} {
			want := http.StatusOK
			if allocAuth {
				want = http.StatusUnauthorized
			}
			if got := rg.do(t, "GET", target, ""); got.status != want {
				t.Errorf("alloc_auth %v: %s from the network: %d, want %d", allocAuth, target, got.status, want)
			}
			if got := rg.do(t, "GET", target, "", "X-Remote-Addr", "127.0.0.1:5", "Host", "localhost:8880"); got.status != http.StatusOK {
				t.Errorf("alloc_auth %v: %s from loopback: %d, want 200", allocAuth, target, got.status)
			}
		}
	}
}
