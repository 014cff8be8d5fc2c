package resp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
)

var _ Guard = (*access.Guard)(nil)
var _ Auditor = (*access.Admin)(nil)

// mustToken makes a per-tag token of tags on in's store.
func (in *instance) mustToken(tb testing.TB, name string, tags ...string) string {
	tb.Helper()
	tok, _, err := in.admin.Create(context.Background(), "test", access.NewToken{Name: name, AppTags: tags})
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// rdbWith is a go-redis client of in that sends AUTH password on
// connecting ("" for none), without retries.
func rdbWith(tb testing.TB, in *instance, password string) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: in.addr, Password: password, Protocol: 2, MaxRetries: -1})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestAllocAuth: with alloc_auth on, each ID command without a token AUTH
// gave, or with one not allowed its tag, is refused with NOAUTH and the
// guard's words, and costs no ID: the next allowed command gets the tag's
// first. A wrong token is refused by AUTH as a wrong password.
func TestAllocAuth(t *testing.T) {
	ctx := context.Background()
	in := start(t, options{cfg: Config{AllocAuth: true}, tokens: true})
	if _, err := in.alloc.CreateTag(ctx, segment.NewTag{AppTag: "order", Step: 10}); err != nil {
		t.Fatal(err)
	}
	orders := in.mustToken(t, "orders-svc", "order")
	invoices := in.mustToken(t, "invoices-svc", "invoice")

	missing := "NOAUTH " + access.ErrTokenMissing.Error()
	forbidden := "NOAUTH " + access.ErrForbidden.Error()
	for _, c := range []struct {
		name, password string
		cmd            []any
		want           string
	}{
		{"GET without AUTH", "", []any{"GET", "order"}, missing},
		{"INCR without AUTH", "", []any{"INCR", "order"}, missing},
		{"INCRBY without AUTH", "", []any{"INCRBY", "order", "1"}, missing},
		{"MGET without AUTH", "", []any{"MGET", "order"}, missing},
		{"IDS without AUTH", "", []any{"IDS", "order", "5"}, missing},
		{"SNOWFLAKE without AUTH", "", []any{"SNOWFLAKE"}, missing},
		{"GET with another tag's token", invoices, []any{"GET", "order"}, forbidden},
		{"INCR with another tag's token", invoices, []any{"INCR", "order"}, forbidden},
		{"MGET with one tag not allowed", invoices, []any{"MGET", "invoice", "order"}, forbidden},
		{"IDS with another tag's token", invoices, []any{"IDS", "order", "5"}, forbidden},
		{"GET of an unknown tag", orders, []any{"GET", "nope"}, forbidden},
	} {
		err := rdbWith(t, in, c.password).Do(ctx, c.cmd...).Err()
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A wrong token: AUTH fails as a wrong password does, so the client
	// cannot connect.
	if err := rdbWith(t, in, "0f673adf80504e2eaa552f5d791b644c").Ping(ctx).Err(); err == nil || err.Error() != "ERR invalid password" {
		t.Errorf("AUTH with an unknown token: %v, want ERR invalid password", err)
	}
	// Nothing was taken: the tag's IDs start at its first.
	rdb := rdbWith(t, in, orders)
	if got := mustGet(t, rdb, "order"); got != 1 {
		t.Errorf("GET order with its token = %d, want 1: a refused command took an ID", got)
	}
	if got, err := rdb.Incr(ctx, "order").Result(); err != nil || got != 2 {
		t.Errorf("INCR order = %d, %v; want 2", got, err)
	}
	if got, err := rdb.Do(ctx, "IDS", "order", "2").StringSlice(); err != nil || strings.Join(got, ",") != "3,4" {
		t.Errorf("IDS order 2 = %q, %v; want 3,4", got, err)
	}
	for _, tok := range []string{orders, invoices} {
		if err := rdbWith(t, in, tok).Do(ctx, "SNOWFLAKE").Err(); err != nil {
			t.Errorf("SNOWFLAKE with a token: %v, want an ID (any valid token)", err)
		}
	}

	// A revocation holds on a connection AUTHed before it.
	if err := in.admin.Revoke(ctx, "test", "orders-svc"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "GET", "order").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH "+access.ErrTokenUnknown.Error()) {
		t.Errorf("GET with a token revoked since AUTH: %v, want NOAUTH %s", err, access.ErrTokenUnknown)
	}
}

// TestAuthWithAllocAuthOff: with alloc_auth off, ID commands need no
// token, and AUTH takes a tag token (a client configured with one ahead
// of alloc_auth being turned on connects) but not an unknown one.
func TestAuthWithAllocAuthOff(t *testing.T) {
	ctx := context.Background()
	in := start(t, options{cfg: Config{AdminToken: "s3cret-admin"}, tokens: true})
	tok := in.mustToken(t, "svc", "test_business")
	for _, password := range []string{"", tok, "s3cret-admin"} {
		if got := mustGet(t, rdbWith(t, in, password), "test_business"); got < 1 {
			t.Errorf("GET with AUTH %q: %d", password, got)
		}
	}
	if err := rdbWith(t, in, "not-a-token-at-all").Ping(ctx).Err(); err == nil || err.Error() != "ERR invalid password" {
		t.Errorf("AUTH with an unknown token: %v, want ERR invalid password", err)
	}
	// A tag token is no admin token.
	if err := rdbWith(t, in, tok).Do(ctx, "HSET", "new_tag", "step", "10").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Errorf("HSET with a tag token: %v, want NOAUTH", err)
	}
	if _, err := New(Config{AllocAuth: true}, Deps{Segments: in.alloc}); err == nil {
		t.Error("New with AllocAuth and no Guard: no error")
	}
}

// TestHSETAudited: a tag HSET creates is in the audit log with the
// caller, as the connection was let in, and its fields.
func TestHSETAudited(t *testing.T) {
	ctx := context.Background()
	in := start(t, options{cfg: Config{AdminToken: "s3cret-admin"}, tokens: true})
	rdb := rdbWith(t, in, "s3cret-admin")
	if err := rdb.Do(ctx, "HSET", "orders", "step", "10", "format", "fixed_length", "length", "8").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "HSET", "bills", "format", "dated", "period", "month", "prefix", "BILL").Err(); err != nil {
		t.Fatal(err)
	}
	log, err := in.admin.Log(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 {
		t.Fatalf("audit log = %+v, want 2 entries", log)
	}
	for i, w := range []struct{ subject, detail string }{
		{"bills", `"format":"dated","length":6,"period":"month","time_zone":"UTC","prefix":"BILL","separator":""}`},
		{"orders", `{"app_tag":"orders","step":10,"start":10000000,"description":"","format":"fixed_length","length":8}`},
	} {
		e := log[i]
		if e.Action != access.ActionTagCreate || e.Subject != w.subject || !strings.HasPrefix(e.Caller, "admin-token 127.0.0.1:") ||
			!strings.HasSuffix(e.Detail, w.detail) {
			t.Errorf("entry %d = %+v; want tag.create of %s by admin-token 127.0.0.1:…, detail ending %s", i, e, w.subject, w.detail)
		}
	}
	var rerr redis.Error
	if err := rdbWith(t, in, "").Do(ctx, "HSET", "x", "step", "1").Err(); !errors.As(err, &rerr) {
		t.Errorf("HSET without AUTH: %v, want a refusal", err)
	}
	if log, _ := in.admin.Log(ctx, 0); len(log) != 2 {
		t.Errorf("a refused HSET wrote an audit entry: %+v", log)
	}
}
