package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

func accessCases() []testCase {
	return []testCase{
		{"access/a token is kept with its tags and the database's time, and listed by name", testTokenKept},
		{"access/a token's secret is nowhere in its row, only its hash", testTokenHashOnly},
		{"access/a name or hash taken refuses the token and writes nothing", testTokenTaken},
		{"access/revoking deletes the token once, each time with its audit entry", testTokenDeleted},
		{"access/handles creating one name at once: one wins, one entry", testTokenRace},
		{"access/the audit log is newest first, bounded, by the database's clock", testAuditLog},
	}
}

// hashOf is a token's hash as access.HashToken makes it, for the cases
// that write rows without the domain.
func hashOf(secret string) string { return access.HashToken(secret) }

// entry is an audit entry as the domain makes it.
func entry(action access.Action, subject, detail string) access.Entry {
	return access.Entry{Caller: "admin-token 192.0.2.1:4000", Action: action, Subject: subject, Detail: detail}
}

// mustTokens lists the tokens or fails t.
func mustTokens(t *testing.T, st store.Store) []access.StoredToken {
	t.Helper()
	toks, err := st.Tokens(t.Context())
	if err != nil {
		t.Fatalf("Tokens: %v", err)
	}
	return toks
}

// mustAuditLog reads the whole audit log or fails t.
func mustAuditLog(t *testing.T, st store.Store) []access.Entry {
	t.Helper()
	es, err := st.AuditLog(t.Context(), access.MaxAuditLimit)
	if err != nil {
		t.Fatalf("AuditLog: %v", err)
	}
	return es
}

// recent reports whether at is the database's clock of a moment ago: a
// clock read, in UTC, not the zero time. An hour's margin either way
// covers any clock the test machine and its database disagree by.
func recent(at time.Time) bool {
	return at.Location() == time.UTC && at.After(time.Now().Add(-time.Hour)) && at.Before(time.Now().Add(time.Hour))
}

func testTokenKept(t *testing.T, db DB) {
	ctx := t.Context()
	st := db.Open(t)
	for _, tok := range []access.StoredToken{
		{Name: "orders-svc", Hash: hashOf("secret-orders-0001"), AppTags: []string{"invoice", "order"}},
		{Name: "a-first", Hash: hashOf("secret-first-00001"), AppTags: []string{"test_business"}},
	} {
		if err := st.CreateToken(ctx, tok, entry(access.ActionTokenCreate, tok.Name, `{"app_tags":[]}`)); err != nil {
			t.Fatalf("CreateToken(%s): %v", tok.Name, err)
		}
	}
	toks := mustTokens(t, db.Open(t)) // another handle: it is in the database
	if len(toks) != 2 || toks[0].Name != "a-first" || toks[1].Name != "orders-svc" {
		t.Fatalf("Tokens = %+v, want a-first then orders-svc", toks)
	}
	got := toks[1]
	if got.Hash != hashOf("secret-orders-0001") || !slices.Equal(got.AppTags, []string{"invoice", "order"}) || !recent(got.CreatedAt) {
		t.Errorf("orders-svc = %+v; want its hash, tags [invoice order], created_at by the database's clock", got)
	}
}

func testTokenHashOnly(t *testing.T, db DB) {
	ctx := t.Context()
	st := db.Open(t)
	a, err := access.NewAdmin(st, segment.ValidTag, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	made, _, err := a.Create(ctx, "loopback 127.0.0.1:1", access.NewToken{Name: "made", AppTags: []string{"order"}})
	if err != nil {
		t.Fatal(err)
	}
	const chosen = "0f673adf80504e2eaa552f5d791b644c"
	if _, _, err := a.Create(ctx, "loopback 127.0.0.1:1", access.NewToken{Name: "chosen", AppTags: []string{"order"}, Secret: chosen}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"alloc_tokens", "audit_log"} {
		rows := db.rows(t, "SELECT * FROM "+table)
		if len(rows) != 2 {
			t.Fatalf("%s holds %d rows, want 2", table, len(rows))
		}
		for _, row := range rows {
			for _, secret := range []string{made, chosen} {
				if strings.Contains(row, secret) || strings.Contains(strings.ToLower(row), strings.ToLower(secret)) {
					t.Errorf("%s row %q holds a token's secret", table, row)
				}
			}
			if table == "alloc_tokens" && !strings.Contains(row, access.HashToken(made)) && !strings.Contains(row, access.HashToken(chosen)) {
				t.Errorf("alloc_tokens row %q holds neither token's hash", row)
			}
		}
	}
}

func testTokenTaken(t *testing.T, db DB) {
	ctx := t.Context()
	st := db.Open(t)
	first := access.StoredToken{Name: "svc", Hash: hashOf("secret-svc-000001"), AppTags: []string{"order"}}
	if err := st.CreateToken(ctx, first, entry(access.ActionTokenCreate, "svc", "{}")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tok  access.StoredToken
	}{
		{"the name", access.StoredToken{Name: "svc", Hash: hashOf("another-secret-01"), AppTags: []string{"invoice"}}},
		{"the hash", access.StoredToken{Name: "other", Hash: first.Hash, AppTags: []string{"invoice"}}},
	} {
		if err := st.CreateToken(ctx, c.tok, entry(access.ActionTokenCreate, c.tok.Name, "{}")); !errors.Is(err, access.ErrTokenExists) {
			t.Errorf("CreateToken with %s taken = %v, want %v", c.name, err, access.ErrTokenExists)
		}
	}
	if toks := mustTokens(t, st); len(toks) != 1 || !slices.Equal(toks[0].AppTags, []string{"order"}) {
		t.Errorf("Tokens = %+v, want svc alone, unchanged", toks)
	}
	if es := mustAuditLog(t, st); len(es) != 1 {
		t.Errorf("audit log = %+v, want the first create's entry alone", es)
	}
}

func testTokenDeleted(t *testing.T, db DB) {
	ctx := t.Context()
	st := db.Open(t)
	tok := access.StoredToken{Name: "svc", Hash: hashOf("secret-svc-000001"), AppTags: []string{"order"}}
	if err := st.CreateToken(ctx, tok, entry(access.ActionTokenCreate, "svc", "{}")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		ok, err := st.DeleteToken(ctx, "svc", entry(access.ActionTokenRevoke, "svc", `{"app_tags":["order"]}`))
		if err != nil || ok != want {
			t.Errorf("DeleteToken #%d = %v, %v; want %v", i+1, ok, err, want)
		}
	}
	if toks := mustTokens(t, st); len(toks) != 0 {
		t.Errorf("Tokens after the delete = %+v, want none", toks)
	}
	es := mustAuditLog(t, st)
	if len(es) != 2 || es[0].Action != access.ActionTokenRevoke || es[0].Detail != `{"app_tags":["order"]}` {
		t.Errorf("audit log = %+v, want the revoke's entry then the create's, none for the second delete", es)
	}
	// The name is free again.
	if err := st.CreateToken(ctx, tok, entry(access.ActionTokenCreate, "svc", "{}")); err != nil {
		t.Errorf("CreateToken after the delete: %v", err)
	}
}

func testTokenRace(t *testing.T, db DB) {
	const handles = 3
	var wg sync.WaitGroup
	errC := make(chan error, handles)
	for i := range handles {
		st := db.Open(t)
		wg.Go(func() {
			tok := access.StoredToken{Name: "svc", Hash: hashOf(fmt.Sprintf("secret-number-%04d", i)), AppTags: []string{"order"}}
			errC <- st.CreateToken(context.Background(), tok, entry(access.ActionTokenCreate, "svc", "{}"))
		})
	}
	wg.Wait()
	close(errC)
	won := 0
	for err := range errC {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, access.ErrTokenExists):
			t.Errorf("a losing CreateToken = %v, want %v", err, access.ErrTokenExists)
		}
	}
	st := db.Open(t)
	if toks, es := mustTokens(t, st), mustAuditLog(t, st); won != 1 || len(toks) != 1 || len(es) != 1 {
		t.Errorf("%d creates won, %d tokens, %d audit entries; want 1 each", won, len(toks), len(es))
	}
}

func testAuditLog(t *testing.T, db DB) {
	ctx := t.Context()
	st := db.Open(t)
	if es := mustAuditLog(t, st); len(es) != 0 {
		t.Fatalf("a new database's audit log = %+v, want none", es)
	}
	other := db.Open(t)
	for i, h := range []store.Store{st, other, st, other, st} {
		detail := fmt.Sprintf(`{"step":%d}`, i)
		if err := h.Audit(ctx, entry(access.ActionTagCreate, fmt.Sprintf("tag%d", i), detail)); err != nil {
			t.Fatalf("Audit #%d: %v", i, err)
		}
	}
	es := mustAuditLog(t, st)
	if len(es) != 5 {
		t.Fatalf("audit log has %d entries, want 5", len(es))
	}
	for i, e := range es {
		n := 4 - i // newest first
		want := entry(access.ActionTagCreate, fmt.Sprintf("tag%d", n), fmt.Sprintf(`{"step":%d}`, n))
		if e.Caller != want.Caller || e.Action != want.Action || e.Subject != want.Subject || e.Detail != want.Detail || !recent(e.At) {
			t.Errorf("entry %d = %+v; want %+v at the database's clock", i, e, want)
		}
		if i > 0 && e.ID >= es[i-1].ID {
			t.Errorf("entry %d has ID %d after ID %d: want IDs decreasing, newest first", i, e.ID, es[i-1].ID)
		}
	}
	if two, err := st.AuditLog(ctx, 2); err != nil || len(two) != 2 || two[0].ID != es[0].ID || two[1].ID != es[1].ID {
		t.Errorf("AuditLog(2) = %+v, %v; want the 2 newest", two, err)
	}
}

// rows reads every row of query on db through a connection of its own, as
// an operator's client would, each row as its columns' text joined by
// " | ": what a test looks through for what must not be there.
func (db DB) rows(tb testing.TB, query string) []string {
	tb.Helper()
	x, err := sql.Open(db.driver(tb).sqlName, db.DSN)
	if err != nil {
		tb.Fatalf("open %s: %v", db.Driver, err)
	}
	defer x.Close()
	rs, err := x.QueryContext(context.Background(), query)
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			tb.Fatalf("%s: %v", query, err)
		}
		texts := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			texts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(texts, " | "))
	}
	if err := rs.Err(); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return out
}
