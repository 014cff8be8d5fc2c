package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestDatabaseBeforeAccess: a database from before per-tag tokens (no
// alloc_tokens, no audit_log) starts as it is on MySQL and PostgreSQL,
// and each access call then fails with ErrMissingTables naming the tables
// and -init-schema, which creates them, reporting it; SQLite creates them
// at its next open.
func TestDatabaseBeforeAccess(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := t.Context()
			db := d.NewDB(t)
			db.Exec(t, "DROP TABLE alloc_tokens", "DROP TABLE audit_log")
			if d.Name == "sqlite" {
				st, _, err := openStore(t, db, false)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Tokens(ctx); err != nil {
					t.Errorf("Tokens after SQLite's open: %v", err)
				}
				return
			}
			st, _, err := openStore(t, db, false)
			if err != nil {
				t.Fatalf("a start without -init-schema: %v", err)
			}
			tok := access.StoredToken{Name: "svc", Hash: access.HashToken("secret-svc-000001"), AppTags: []string{"order"}}
			e := access.Entry{Caller: "test", Action: access.ActionTokenCreate, Subject: "svc", Detail: "{}"}
			calls := map[string]error{"CreateToken": st.CreateToken(ctx, tok, e), "Audit": st.Audit(ctx, e)}
			_, calls["Tokens"] = st.Tokens(ctx)
			_, calls["DeleteToken"] = st.DeleteToken(ctx, "svc", e)
			_, calls["AuditLog"] = st.AuditLog(ctx, 10)
			for name, err := range calls {
				if !errors.Is(err, store.ErrMissingTables) || !strings.Contains(err.Error(), "alloc_tokens, audit_log") ||
					!strings.Contains(err.Error(), "-init-schema") {
					t.Errorf("%s without the tables = %v; want %v naming alloc_tokens, audit_log and -init-schema", name, err, store.ErrMissingTables)
				}
			}
			st, reports, err := openStore(t, db, true)
			if err != nil {
				t.Fatalf("-init-schema: %v", err)
			}
			if want := []string{"created table alloc_tokens", "created table audit_log"}; !slices.Equal(reports, want) {
				t.Errorf("-init-schema reported %q, want %q", reports, want)
			}
			if err := st.CreateToken(ctx, tok, e); err != nil {
				t.Errorf("CreateToken after -init-schema: %v", err)
			}
		})
	}
}
