package access_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/errs"
)

// tinyidToken is a token as Tinyid makes them: 32 hex digits.
const tinyidToken = "0f673adf80504e2eaa552f5d791b644c"

// adminToken is the service's admin token, which no tag token may be.
const adminToken = "s3cret-admin-token"

// validTag stands in for segment.ValidTag, which this package's tests do
// not import (the domain stays apart): the same characters and length.
var validTag = access.ValidName

// newAdmin returns the admin calls and a guard on one memory store.
func newAdmin(t *testing.T) (*access.Admin, *access.Guard) {
	t.Helper()
	st := newMemStore()
	g, err := access.NewGuard(t.Context(), st, access.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	a, err := access.NewAdmin(st, validTag, g, "")
	if err != nil {
		t.Fatal(err)
	}
	return a, g
}

// TestCreateRefuses: bad input is refused in the domain's words, naming
// the field, and writes nothing (no token, no audit entry).
func TestCreateRefuses(t *testing.T) {
	tooMany := make([]string, access.MaxTokenTags+1)
	for i := range tooMany {
		tooMany[i] = "t" + strings.Repeat("x", i%60) + string(rune('a'+i%26))
	}
	for _, c := range []struct {
		name  string
		n     access.NewToken
		want  error
		field string
	}{
		{"empty name", access.NewToken{AppTags: []string{"order"}}, access.ErrInvalidName, "name"},
		{"name with a space", access.NewToken{Name: "a b", AppTags: []string{"order"}}, access.ErrInvalidName, "name"},
		{"no tags", access.NewToken{Name: "svc"}, access.ErrInvalidTags, "app_tags"},
		{"an invalid tag", access.NewToken{Name: "svc", AppTags: []string{"order", "a/b"}}, access.ErrInvalidTags, "app_tags"},
		{"a tag twice", access.NewToken{Name: "svc", AppTags: []string{"order", "invoice", "order"}}, access.ErrInvalidTags, "app_tags"},
		{"too many tags", access.NewToken{Name: "svc", AppTags: tooMany}, access.ErrInvalidTags, "app_tags"},
		{"a short token", access.NewToken{Name: "svc", AppTags: []string{"order"}, Secret: "0123456789abcde"}, access.ErrInvalidToken, "token"},
		{"a token with a space", access.NewToken{Name: "svc", AppTags: []string{"order"}, Secret: "0123456789 abcdef"}, access.ErrInvalidToken, "token"},
		{"a token with '=' inside", access.NewToken{Name: "svc", AppTags: []string{"order"}, Secret: "0123456789=abcdef"}, access.ErrInvalidToken, "token"},
		{"a token too long", access.NewToken{Name: "svc", AppTags: []string{"order"}, Secret: strings.Repeat("a", access.MaxTokenLength+1)}, access.ErrInvalidToken, "token"},
		{"an existing name", access.NewToken{Name: "taken", AppTags: []string{"order"}}, access.ErrTokenExists, "name"},
		{"an existing token", access.NewToken{Name: "svc", AppTags: []string{"order"}, Secret: tinyidToken}, access.ErrSecretInUse, "token"},
		{"the admin token", access.NewToken{Name: "svc", AppTags: []string{"order"}, Secret: adminToken}, access.ErrAdminToken, "token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newMemStore()
			a, err := access.NewAdmin(st, validTag, nil, adminToken)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := a.Create(t.Context(), "test", access.NewToken{Name: "taken", AppTags: []string{"x"}, Secret: tinyidToken}); err != nil {
				t.Fatal(err)
			}
			_, _, err = a.Create(t.Context(), "test", c.n)
			e, ok := errs.Describe(err)
			if !errors.Is(err, c.want) || !ok || e.Field != c.field {
				t.Fatalf("Create: %v; want %v naming %q", err, c.want, c.field)
			}
			if len(st.toks) != 1 || len(st.log) != 1 {
				t.Errorf("after the refusal: %d tokens, %d audit entries; want the 1 and 1 made before", len(st.toks), len(st.log))
			}
		})
	}
}

// TestCreateRevokeAudited: a token made, listed, used and revoked; each
// change leaves its audit entry with the caller and what changed, and no
// entry, listing or stored row holds the secret.
func TestCreateRevokeAudited(t *testing.T) {
	ctx := t.Context()
	st := newMemStore()
	g, err := access.NewGuard(ctx, st, access.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	a, err := access.NewAdmin(st, validTag, g, "")
	if err != nil {
		t.Fatal(err)
	}
	secret, tags, err := a.Create(ctx, "admin-token 10.0.0.7:5000", access.NewToken{Name: "orders-svc", AppTags: []string{"order", "invoice"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tags, ",") != "invoice,order" {
		t.Errorf("Create's tags = %q, want them sorted", tags)
	}
	// This instance's guard reloaded with the change, not a refresh later.
	if err := g.Allow(secret, "order"); err != nil {
		t.Errorf("Allow(new token, order) = %v, want nil at once", err)
	}
	if err := g.Allow(secret, "other"); !errors.Is(err, access.ErrForbidden) {
		t.Errorf("Allow(new token, other) = %v, want %v", err, access.ErrForbidden)
	}
	if _, _, err := a.Create(ctx, "loopback 127.0.0.1:6000", access.NewToken{Name: "tinyid", AppTags: []string{"test"}, Secret: tinyidToken}); err != nil {
		t.Fatal(err)
	}
	if err := g.Allow(tinyidToken, "test"); err != nil {
		t.Errorf("Allow(chosen token, test) = %v, want nil", err)
	}
	list, err := a.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "orders-svc" || list[1].Name != "tinyid" || list[0].CreatedAt.IsZero() {
		t.Errorf("List = %+v, %v; want orders-svc then tinyid, with their times", list, err)
	}
	for _, s := range st.toks {
		if s.Hash != access.HashToken(secret) && s.Hash != access.HashToken(tinyidToken) {
			t.Errorf("stored token %+v: hash is not the secret's SHA-256", s)
		}
	}
	if err := a.Revoke(ctx, "admin-token 10.0.0.7:5001", "orders-svc"); err != nil {
		t.Fatal(err)
	}
	if err := g.Allow(secret, "order"); !errors.Is(err, access.ErrTokenUnknown) {
		t.Errorf("Allow(revoked token) = %v, want %v at once", err, access.ErrTokenUnknown)
	}
	if err := a.Revoke(ctx, "test", "orders-svc"); !errors.Is(err, access.ErrNoSuchToken) {
		t.Errorf("Revoke again = %v, want %v", err, access.ErrNoSuchToken)
	}
	if err := a.Record(ctx, "loopback 127.0.0.1:7000", access.ActionTagCreate, "order", map[string]any{"step": 1000}); err != nil {
		t.Fatal(err)
	}

	log, err := a.Log(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		action          access.Action
		caller, subject string
		detail          string
	}{
		{access.ActionTagCreate, "loopback 127.0.0.1:7000", "order", `{"step":1000}`},
		{access.ActionTokenRevoke, "admin-token 10.0.0.7:5001", "orders-svc", `{"app_tags":["invoice","order"]}`},
		{access.ActionTokenCreate, "loopback 127.0.0.1:6000", "tinyid", `{"app_tags":["test"],"chosen_token":true}`},
		{access.ActionTokenCreate, "admin-token 10.0.0.7:5000", "orders-svc", `{"app_tags":["invoice","order"],"chosen_token":false}`},
	}
	if len(log) != len(want) {
		t.Fatalf("audit log = %+v, want %d entries", log, len(want))
	}
	for i, w := range want {
		e := log[i]
		if e.Action != w.action || e.Caller != w.caller || e.Subject != w.subject || e.Detail != w.detail || !json.Valid([]byte(e.Detail)) {
			t.Errorf("entry %d = %+v; want %s of %q by %q, detail %s", i, e, w.action, w.subject, w.caller, w.detail)
		}
		for _, s := range []string{secret, tinyidToken, access.HashToken(secret), access.HashToken(tinyidToken)} {
			if strings.Contains(e.Detail, s) || strings.Contains(e.Caller, s) {
				t.Errorf("entry %d = %+v holds a secret or its hash", i, e)
			}
		}
	}
	if log, err := a.Log(ctx, 2); err != nil || len(log) != 2 || log[0].Action != access.ActionTagCreate {
		t.Errorf("Log(2) = %+v, %v; want the 2 newest", log, err)
	}
	for _, limit := range []int{-1, access.MaxAuditLimit + 1} {
		if _, err := a.Log(ctx, limit); !errors.Is(err, access.ErrInvalidLimit) {
			t.Errorf("Log(%d) = %v, want %v", limit, err, access.ErrInvalidLimit)
		}
	}
}

// TestStoreFailures: a store that fails makes each call fail, wrapped,
// and changes nothing.
func TestStoreFailures(t *testing.T) {
	ctx := t.Context()
	st := newMemStore()
	a, err := access.NewAdmin(st, validTag, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Create(ctx, "test", access.NewToken{Name: "svc", AppTags: []string{"order"}}); err != nil {
		t.Fatal(err)
	}
	st.setDown(true)
	calls := map[string]error{}
	_, _, calls["create"] = a.Create(ctx, "test", access.NewToken{Name: "svc2", AppTags: []string{"order"}})
	calls["revoke"] = a.Revoke(ctx, "test", "svc")
	_, calls["list"] = a.List(ctx)
	calls["record"] = a.Record(ctx, "test", access.ActionAdvance, "", nil)
	_, calls["log"] = a.Log(ctx, 5)
	for name, err := range calls {
		if !errors.Is(err, errDown) {
			t.Errorf("%s with the store down = %v, want it to wrap %v", name, err, errDown)
		}
	}
	if len(st.toks) != 1 || len(st.log) != 1 {
		t.Errorf("%d tokens, %d audit entries; want 1 and 1", len(st.toks), len(st.log))
	}
	if _, err := access.NewAdmin(nil, validTag, nil, ""); err == nil {
		t.Error("NewAdmin without a store: no error")
	}
}
