package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// The domain types satisfy the interfaces the server consumes.
var (
	_ Guard  = (*access.Guard)(nil)
	_ Tokens = (*access.Admin)(nil)
)

// authRig is a server wired as main does, on a real store: the
// allocator, the guard reloading every refresh, the admin calls, and a
// fake snowflake source.
type authRig struct {
	*rig
	guard *access.Guard
	flake *fakeFlake
}

// newAuthRig serves on a new handle of db, with alloc_auth as given.
func newAuthRig(t *testing.T, db storetest.DB, allocAuth bool, refresh time.Duration) *authRig {
	t.Helper()
	return newAuthRigConfig(t, db, Config{AdminToken: "s3cret-admin-token", AllocAuth: allocAuth}, refresh)
}

// newAuthRigConfig is newAuthRig with the server's cfg.
func newAuthRigConfig(t *testing.T, db storetest.DB, cfg Config, refresh time.Duration) *authRig {
	t.Helper()
	ctx := context.Background()
	st := db.Open(t)
	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	guard, err := access.NewGuard(ctx, st, access.Config{Refresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guard.Close() })
	admin, err := access.NewAdmin(st, segment.ValidTag, guard, cfg.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	flake := newFakeFlake(t)
	srv, err := New(cfg, Deps{Segments: alloc, Store: st, Snowflake: flake, Guard: guard, Tokens: admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &authRig{rig: &rig{srv: srv}, guard: guard, flake: flake}
}

// mustToken creates a token of tags through POST /tokens and returns it.
func (rg *authRig) mustToken(t *testing.T, name string, tags ...string) string {
	t.Helper()
	got := rg.do(t, "POST", "/tokens", `{"name":"`+name+`","app_tags":["`+strings.Join(tags, `","`)+`"]}`, adminAuth...)
	tok, _ := got.body["token"].(string)
	if got.status != http.StatusCreated || tok == "" {
		t.Fatalf("POST /tokens %s: %d %s", name, got.status, got.raw)
	}
	return tok
}

// mustTag creates tag through POST /tags.
func (rg *authRig) mustTag(t *testing.T, tag string) {
	t.Helper()
	if got := rg.do(t, "POST", "/tags", `{"app_tag":"`+tag+`","step":10}`, adminAuth...); got.status != http.StatusCreated {
		t.Fatalf("POST /tags %s: %d %s", tag, got.status, got.raw)
	}
}

func withToken(token string) []string { return []string{"Authorization", "Bearer " + token} }

// TestAllocAuth: with alloc_auth on, every ID route refuses a call
// without a token allowed for its tag, in the guard's words and kinds,
// and a refused call costs no ID: the next allowed one gets the tag's
// first. Both ways of sending the token work.
func TestAllocAuth(t *testing.T) {
	rg := newAuthRig(t, storetest.SQLite().NewDB(t), true, 0)
	rg.mustTag(t, "order")
	orders := rg.mustToken(t, "orders-svc", "order")
	invoices := rg.mustToken(t, "invoices-svc", "invoice")

	for _, c := range []struct {
		name, target string
		headers      []string
		status, code int
		kind, msg    string
	}{
		{"no token", "/alloc?app_tag=order", nil, 401, 7, "unauthorized", access.ErrTokenMissing.Error()},
		{"another scheme", "/alloc?app_tag=order", []string{"Authorization", "Basic b3JkZXJzOnNlY3JldA=="}, 401, 7, "unauthorized", access.ErrTokenMissing.Error()},
		{"the admin token", "/alloc?app_tag=order", adminAuth, 401, 7, "unauthorized", access.ErrTokenUnknown.Error()},
		{"an unknown token", "/alloc?app_tag=order", withToken("0f673adf80504e2eaa552f5d791b644c"), 401, 7, "unauthorized", access.ErrTokenUnknown.Error()},
		{"another tag's token", "/alloc?app_tag=order", withToken(invoices), 403, 7, "forbidden", access.ErrForbidden.Error()},
		{"another tag's token in token=", "/alloc?app_tag=order&token=" + invoices, nil, 403, 7, "forbidden", access.ErrForbidden.Error()},
		{"a batch with another tag's token", "/alloc?app_tag=order&count=5", withToken(invoices), 403, 7, "forbidden", access.ErrForbidden.Error()},
		{"an unknown tag", "/alloc?app_tag=nope", withToken(orders), 403, 7, "forbidden", access.ErrForbidden.Error()},
		{"token= twice", "/alloc?app_tag=order&token=a&token=b", nil, 400, 1, "bad_request", "invalid token: given more than once: send it once"},
		{"snowflake without a token", "/snowflake", nil, 401, 7, "unauthorized", access.ErrTokenMissing.Error()},
		{"snowflake with an unknown token", "/snowflake?token=0f673adf80504e2eaa552f5d791b644c", nil, 401, 7, "unauthorized", access.ErrTokenUnknown.Error()},
	} {
		got := rg.do(t, "GET", c.target, "", c.headers...)
		if got.status != c.status || got.code() != float64(c.code) || got.body["kind"] != c.kind || got.body["msg"] != c.msg {
			t.Errorf("%s: %d %s; want %d, resp_code %d, kind %s, msg %q", c.name, got.status, got.raw, c.status, c.code, c.kind, c.msg)
		}
	}
	if calls := rg.flake.list(); len(calls) != 0 {
		t.Errorf("refused snowflake calls reached the source: %q", calls)
	}
	// Nothing was taken: the tag's first ID is the allowed call's.
	for i, c := range []struct {
		target  string
		headers []string
		want    float64
	}{
		{"/alloc?app_tag=order", withToken(orders), 1},
		{"/alloc?app_tag=order&token=" + orders, nil, 2},
		{"/alloc?app_tag=order&count=3", []string{"authorization", "bearer " + orders}, 3},
	} {
		if got := rg.do(t, "GET", c.target, "", c.headers...); got.status != 200 || got.body["id"] != c.want {
			t.Errorf("allowed call %d: %d %s; want id %v", i, got.status, got.raw, c.want)
		}
	}
	for _, tok := range []string{orders, invoices} {
		if got := rg.do(t, "GET", "/snowflake", "", withToken(tok)...); got.status != 200 {
			t.Errorf("/snowflake with a token: %d %s, want 200 (any valid token)", got.status, got.raw)
		}
	}
	// Not ID calls, nor about a tag: no token needed.
	for _, target := range []string{"/health", "/snowflake/12345"} {
		if got := rg.do(t, "GET", target, ""); got.status != 200 {
			t.Errorf("%s without a token: %d %s, want 200", target, got.status, got.raw)
		}
	}
}

// TestAllocAuthOff: with alloc_auth off, ID calls need no token, and the
// token routes still serve (tokens are made before it is turned on).
func TestAllocAuthOff(t *testing.T) {
	rg := newAuthRig(t, storetest.SQLite().NewDB(t), false, 0)
	tok := rg.mustToken(t, "svc", "test_business")
	for _, h := range [][]string{nil, withToken("not-a-token-at-all"), withToken(tok)} {
		if got := rg.do(t, "GET", "/alloc?app_tag=test_business", "", h...); got.status != 200 {
			t.Errorf("/alloc with %q: %d %s, want 200", h, got.status, got.raw)
		}
	}
	if _, err := New(Config{AllocAuth: true}, Deps{Segments: newFakeSegments(), Store: &fakePinger{}}); err == nil {
		t.Error("New with AllocAuth and no Guard: no error")
	}
}

// TestTokenAdminCalls: POST, GET and DELETE /tokens, PATCH /tags and GET /audit as an
// operator uses them; each change is in the audit log with its caller
// and what changed, and no answer but the create's holds the secret (nor
// its hash).
func TestTokenAdminCalls(t *testing.T) {
	rg := newAuthRig(t, storetest.SQLite().NewDB(t), true, 0)
	rg.mustTag(t, "order")
	got := rg.do(t, "POST", "/tokens", `{"name":"orders-svc","app_tags":["order","invoice"]}`, adminAuth...)
	secret, _ := got.body["token"].(string)
	if got.status != 201 || got.code() != 0.0 || got.body["name"] != "orders-svc" || len(secret) != 43 ||
		!sameStrings(got.body["app_tags"], "invoice", "order") {
		t.Fatalf("POST /tokens: %d %s; want 201, the name, a 43-character token, the tags sorted", got.status, got.raw)
	}
	const chosen = "0f673adf80504e2eaa552f5d791b644c"
	if got := rg.do(t, "POST", "/tokens", `{"name":"tinyid","app_tags":["test"],"token":"`+chosen+`"}`, adminAuth...); got.status != 201 || got.body["token"] != chosen {
		t.Fatalf("POST /tokens with a chosen token: %d %s", got.status, got.raw)
	}
	list := rg.do(t, "GET", "/tokens", "", adminAuth...)
	toks, _ := list.body["tokens"].([]any)
	if list.status != 200 || len(toks) != 2 {
		t.Fatalf("GET /tokens: %d %s; want 2 tokens", list.status, list.raw)
	}
	first, _ := toks[0].(map[string]any)
	if first["name"] != "orders-svc" || !sameStrings(first["app_tags"], "invoice", "order") || first["created_at"] == "" {
		t.Errorf("GET /tokens' first: %v; want orders-svc, its tags and created_at", first)
	}
	if got := rg.do(t, "DELETE", "/tokens/orders-svc", "", adminAuth...); got.status != 200 || got.body["name"] != "orders-svc" {
		t.Errorf("DELETE /tokens/orders-svc: %d %s", got.status, got.raw)
	}
	if got := rg.do(t, "GET", "/alloc?app_tag=order", "", withToken(secret)...); got.status != 401 {
		t.Errorf("/alloc with the revoked token: %d %s, want 401 at once", got.status, got.raw)
	}
	if got := rg.do(t, "PATCH", "/tags/order", `{"step":20}`, adminAuth...); got.status != 200 {
		t.Fatalf("PATCH /tags/order: %d %s", got.status, got.raw)
	}
	audit := rg.do(t, "GET", "/audit", "", adminAuth...)
	entries, _ := audit.body["entries"].([]any)
	want := []struct{ action, subject, detail string }{
		{"tag.update", "order", `{"step":20}`},
		{"token.revoke", "orders-svc", `"app_tags":["invoice","order"]`},
		{"token.create", "tinyid", `"chosen_token":true`},
		{"token.create", "orders-svc", `"chosen_token":false`},
		{"tag.create", "order", `"step":10`},
	}
	if audit.status != 200 || len(entries) != len(want) {
		t.Fatalf("GET /audit: %d %s; want %d entries", audit.status, audit.raw, len(want))
	}
	for i, w := range want {
		e, _ := entries[i].(map[string]any)
		detail, _ := e["detail"].(map[string]any)
		if e["action"] != w.action || e["subject"] != w.subject || e["caller"] != "admin-token 192.0.2.1:1234" ||
			detail == nil || e["at"] == "" || !strings.Contains(audit.raw, w.detail) {
			t.Errorf("audit entry %d: %v; want %s of %s by admin-token 192.0.2.1:1234 with %s", i, e, w.action, w.subject, w.detail)
		}
	}
	for _, r := range []reply{list, audit} {
		for _, s := range []string{secret, chosen, access.HashToken(secret), access.HashToken(chosen)} {
			if strings.Contains(r.raw, s) {
				t.Errorf("an answer holds a secret or its hash: %s", r.raw)
			}
		}
	}
	if got := rg.do(t, "GET", "/audit?limit=1", "", adminAuth...); len(got.body["entries"].([]any)) != 1 {
		t.Errorf("GET /audit?limit=1: %s, want 1 entry", got.raw)
	}
}

// TestTokenAdminRefusals: bad input and calls without admin rights are
// refused, naming the field, and change nothing.
func TestTokenAdminRefusals(t *testing.T) {
	rg := newAuthRig(t, storetest.SQLite().NewDB(t), true, 0)
	rg.mustToken(t, "taken", "order")
	for _, c := range []struct {
		name, method, target, body string
		headers                    []string
		status                     int
		kind, field                string
	}{
		{"POST without admin rights", "POST", "/tokens", `{"name":"svc","app_tags":["order"]}`, nil, 401, "unauthorized", ""},
		{"GET without admin rights", "GET", "/tokens", "", nil, 401, "unauthorized", ""},
		{"DELETE without admin rights", "DELETE", "/tokens/taken", "", withToken("wrong"), 401, "unauthorized", ""},
		{"audit without admin rights", "GET", "/audit", "", nil, 401, "unauthorized", ""},
		{"no name", "POST", "/tokens", `{"app_tags":["order"]}`, adminAuth, 400, "bad_request", "name"},
		{"a bad name", "POST", "/tokens", `{"name":"a b","app_tags":["order"]}`, adminAuth, 400, "bad_request", "name"},
		{"no tags", "POST", "/tokens", `{"name":"svc"}`, adminAuth, 400, "bad_request", "app_tags"},
		{"tags not an array", "POST", "/tokens", `{"name":"svc","app_tags":"order"}`, adminAuth, 400, "bad_request", "app_tags"},
		{"an empty array", "POST", "/tokens", `{"name":"svc","app_tags":[]}`, adminAuth, 400, "bad_request", "app_tags"},
		{"a bad tag", "POST", "/tokens", `{"name":"svc","app_tags":["a b"]}`, adminAuth, 400, "bad_request", "app_tags"},
		{"a short token", "POST", "/tokens", `{"name":"svc","app_tags":["order"],"token":"short"}`, adminAuth, 400, "bad_request", "token"},
		{"the admin token", "POST", "/tokens", `{"name":"svc","app_tags":["order"],"token":"s3cret-admin-token"}`, adminAuth, 400, "bad_request", "token"},
		{"an unknown field", "POST", "/tokens", `{"name":"svc","app_tags":["order"],"secret":"x"}`, adminAuth, 400, "bad_request", "body"},
		{"a name taken", "POST", "/tokens", `{"name":"taken","app_tags":["order"]}`, adminAuth, 409, "exists", "name"},
		{"revoke an unknown name", "DELETE", "/tokens/nope", "", adminAuth, 400, "bad_request", "name"},
		{"revoke a bad name", "DELETE", "/tokens/a%20b", "", adminAuth, 400, "bad_request", "name"},
		{"limit 0", "GET", "/audit?limit=0", "", adminAuth, 400, "bad_request", "limit"},
		{"limit too large", "GET", "/audit?limit=1001", "", adminAuth, 400, "bad_request", "limit"},
		{"limit with a leading zero", "GET", "/audit?limit=007", "", adminAuth, 400, "bad_request", "limit"},
		{"limit not a number", "GET", "/audit?limit=all", "", adminAuth, 400, "bad_request", "limit"},
		{"PUT", "PUT", "/tokens/taken", "", adminAuth, 405, "method_not_allowed", ""},
	} {
		got := rg.do(t, c.method, c.target, c.body, c.headers...)
		if got.status != c.status || got.body["kind"] != c.kind || (got.body["field"] != nil) != (c.field != "") ||
			(c.field != "" && got.body["field"] != c.field) {
			t.Errorf("%s: %d %s; want %d, kind %s, field %q", c.name, got.status, got.raw, c.status, c.kind, c.field)
		}
	}
	list := rg.do(t, "GET", "/tokens", "", adminAuth...)
	audit := rg.do(t, "GET", "/audit", "", adminAuth...)
	if n, m := len(list.body["tokens"].([]any)), len(audit.body["entries"].([]any)); n != 1 || m != 1 {
		t.Errorf("after the refusals: %d tokens, %d audit entries; want the 1 and 1 made first", n, m)
	}
	if got := rg.do(t, "PUT", "/tokens/taken", "", adminAuth...); got.header.Get("Allow") != "DELETE" {
		t.Errorf("PUT /tokens/taken: Allow %q, want DELETE", got.header.Get("Allow"))
	}
}

// TestRevokedOnEveryInstance: two instances on one database of each
// engine, each with its allocator, guard and server; a token revoked
// through one is refused by that one at once and by the other at its
// guard's next reload, every tag_refresh (short here), and a token made
// through one is honoured by the other likewise.
func TestRevokedOnEveryInstance(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.NewDB(t)
			const refresh = 20 * time.Millisecond
			one := newAuthRig(t, db, true, refresh)
			two := newAuthRig(t, db, true, refresh)
			tok := one.mustToken(t, "svc", "test_business")
			alloc := func(rg *authRig) int {
				return rg.do(t, "GET", "/alloc?app_tag=test_business", "", withToken(tok)...).status
			}
			waitUntil(t, "the second instance to honour the new token", func() bool { return alloc(two) == 200 })

			if got := one.do(t, "DELETE", "/tokens/svc", "", adminAuth...); got.status != 200 {
				t.Fatalf("DELETE /tokens/svc: %d %s", got.status, got.raw)
			}
			if status := alloc(one); status != 401 {
				t.Errorf("the revoking instance answers the revoked token %d, want 401 at once", status)
			}
			waitUntil(t, "the second instance to refuse the revoked token", func() bool { return alloc(two) == 401 })
		})
	}
}

// waitUntil polls cond until it holds, failing tb after 10 s: a bound for
// a loaded machine, not a figure the test checks (the refresh is 20 ms).
func waitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("no %s within 10s", what)
		}
	}
}

// sameStrings reports whether v, a decoded JSON array, holds want in order.
func sameStrings(v any, want ...string) bool {
	got, _ := v.([]any)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
