package store_test

import (
	"bytes"
	"database/sql"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// postgresRaw runs stmts on dsn, as an operator's psql would.
func postgresRaw(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// postgresBeforeFormats is a segments table as a seed-style schema made it
// on PostgreSQL: without the columns added since, with one row.
var postgresBeforeFormats = []string{`CREATE TABLE segments (
  app_tag     VARCHAR(64)  NOT NULL PRIMARY KEY,
  max_id      BIGINT       NOT NULL DEFAULT 0,
  step        BIGINT       NOT NULL,
  description VARCHAR(256) NOT NULL DEFAULT '',
  update_time TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
)`, `INSERT INTO segments (app_tag, max_id, step) VALUES ('orders', 70, 10)`}

// wantPostgresAddFormats is the statement that adds every format column.
const wantPostgresAddFormats = "ALTER TABLE segments ADD COLUMN IF NOT EXISTS format VARCHAR(16) NOT NULL DEFAULT 'sequential', " +
	"ADD COLUMN IF NOT EXISTS length INTEGER NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS format_key BYTEA NULL"

// TestPostgresStartWithoutTables: an empty database is refused with
// ErrMissingTables, naming both ways to create the tables.
func TestPostgresStartWithoutTables(t *testing.T) {
	_, err := store.OpenPostgres(t.Context(), storetest.PostgresDSN(t), store.PostgresOptions{})
	if !errors.Is(err, store.ErrMissingTables) || !strings.Contains(err.Error(), "-init-schema") ||
		!strings.Contains(err.Error(), "schema_postgres.sql") {
		t.Errorf("OpenPostgres on an empty database: error = %v, want %v naming -init-schema and schema_postgres.sql",
			err, store.ErrMissingTables)
	}
}

// TestPostgresRefusedRole: a role the server refuses is ErrAccessDenied,
// naming the user and the server.
func TestPostgresRefusedRole(t *testing.T) {
	u, err := url.Parse(storetest.PostgresDSN(t))
	if err != nil {
		t.Skipf("%s is not a URL: %v", storetest.PostgresDSNEnv, err)
	}
	u.User = url.User("idalloc_no_such_role")
	_, err = store.OpenPostgres(t.Context(), u.String(), store.PostgresOptions{})
	if !errors.Is(err, store.ErrAccessDenied) || !strings.Contains(err.Error(), "idalloc_no_such_role@") {
		t.Errorf("OpenPostgres as a role that does not exist: error = %v, want %v naming the role", err, store.ErrAccessDenied)
	}
}

// TestPostgresBeforeFormatColumns: a plain start on a segments table from
// before formats serves it as all-sequential; a fixed_length or scrambled
// tag is refused naming the ALTER TABLE that adds the columns, which then
// takes effect on the handle already open.
func TestPostgresBeforeFormatColumns(t *testing.T) {
	ctx := t.Context()
	dsn := storetest.PostgresDSN(t)
	postgresRaw(t, dsn, postgresBeforeFormats...)
	st, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatalf("OpenPostgres without InitSchema on a table before formats: %v", err)
	}
	defer st.Close()
	tags, err := st.Tags(ctx)
	checkOldRow(t, tags, err, 70)
	if f, err := st.Fetch(ctx, "orders", segment.MaxUsableID, 0); err != nil || f.MaxID != 80 {
		t.Errorf("Fetch(orders) = %+v, %v; want max_id 80", f, err)
	}
	err = st.CreateTag(ctx, scrambledTag)
	if !errors.Is(err, segment.ErrFormatUnsupported) || !strings.Contains(err.Error(), wantPostgresAddFormats) {
		t.Fatalf("CreateTag(scrambled) = %v, want %v naming %q", err, segment.ErrFormatUnsupported, wantPostgresAddFormats)
	}
	_, paste, _ := strings.Cut(err.Error(), "or run: ")
	postgresRaw(t, dsn, strings.TrimSuffix(paste, ";"))
	if err := st.CreateTag(ctx, scrambledTag); err != nil {
		t.Fatalf("CreateTag(scrambled) after the ALTER TABLE: %v", err)
	}

	tags, err = st.Tags(ctx)
	checkOldRow(t, tags, err, 80)
	if g := tagNamed(t, tags, err, "scr"); g.Format != segment.FormatScrambled || !bytes.Equal(g.FormatKey, scrambledTag.FormatKey) {
		t.Errorf("scr = %+v, want scrambled with its key", g)
	}
}

// TestPostgresInitSchemaAddsColumns: -init-schema adds the columns to a
// table from before them, keeping its rows (sequential), creates the
// other tables and the seeded row, and is a no-op the second time.
func TestPostgresInitSchemaAddsColumns(t *testing.T) {
	ctx := t.Context()
	dsn := storetest.PostgresDSN(t)
	postgresRaw(t, dsn, postgresBeforeFormats...)
	wantReports := [][]string{
		{"added columns format, length, format_key, start, format_spec to segments", "created table segment_periods",
			"created table worker_leases", "created table worker_layouts", "created table alloc_tokens", "created table audit_log",
			"created table idalloc_region", "added index segments_update_time (update_time) to segments"},
		nil,
	}
	for i, want := range wantReports {
		var reports []string
		st, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{InitSchema: true,
			Report: func(change string) { reports = append(reports, change) }})
		if err != nil {
			t.Fatalf("OpenPostgres with InitSchema (#%d): %v", i+1, err)
		}
		defer st.Close()
		tags, err := st.Tags(ctx)
		checkOldRow(t, tags, err, 70)
		if g := tagNamed(t, tags, err, "test_business"); g.Start != 1 {
			t.Errorf("test_business = %+v, want start 1, seeded by InitSchema", g)
		}
		if !slices.Equal(reports, want) {
			t.Errorf("OpenPostgres with InitSchema (#%d) reported %q, want %q", i+1, reports, want)
		}
		if err := st.CreateTag(ctx, segment.Tag{AppTag: "scr" + string(rune('a'+i)), Step: 10, Format: scrambledTag.Format,
			Length: scrambledTag.Length, FormatKey: scrambledTag.FormatKey}); err != nil {
			t.Errorf("CreateTag(scrambled) after InitSchema (#%d): %v", i+1, err)
		}
		if err := st.CheckLayout(ctx, "c", 0, 10); err != nil {
			t.Errorf("CheckLayout after InitSchema (#%d): %v", i+1, err)
		}
	}
}

// TestPostgresInitSchemaAtOnce: instances starting together on an empty
// database with -init-schema all start; the tables are made once, with
// one genesis row, and reported by one of them.
func TestPostgresInitSchemaAtOnce(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	const instances = 4
	var mu sync.Mutex
	var reports []string
	var wg sync.WaitGroup
	errs := make(chan error, instances)
	for range instances {
		wg.Go(func() {
			st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{InitSchema: true,
				Report: func(change string) { mu.Lock(); reports = append(reports, change); mu.Unlock() }})
			if err != nil {
				errs <- err
				return
			}
			errs <- st.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("OpenPostgres with InitSchema: %v", err)
		}
	}
	slices.Sort(reports)
	want := []string{"created table alloc_tokens", "created table audit_log", "created table idalloc_region", "created table segment_periods",
		"created table segments", "created table worker_layouts", "created table worker_leases"}
	if !slices.Equal(reports, want) {
		t.Errorf("reports = %q, want %q once each", reports, want)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var genesis int
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM worker_leases WHERE cluster = ''`).Scan(&genesis); err != nil || genesis != 1 {
		t.Errorf("genesis rows = %d, %v; want 1", genesis, err)
	}
}

// TestPostgresMissingLayoutTable: CheckLayout on a database without
// worker_layouts says the table is missing (the start names the fix).
func TestPostgresMissingLayoutTable(t *testing.T) {
	db := storetest.Postgres().NewDB(t)
	st := db.Open(t)
	db.Exec(t, "DROP TABLE worker_layouts")
	if err := st.CheckLayout(t.Context(), "c", 0, 10); !errors.Is(err, store.ErrMissingTables) {
		t.Errorf("CheckLayout without worker_layouts: error = %v, want %v", err, store.ErrMissingTables)
	}
}

func TestOpenPostgresReadOnly(t *testing.T) {
	db := storetest.Postgres().NewDB(t)
	st := db.Open(t)
	if err := st.CreateTag(t.Context(), segment.Tag{AppTag: "orders", Step: 10, Start: 11}); err != nil {
		t.Fatal(err)
	}
	r, err := store.OpenPostgresReadOnly(t.Context(), db.DSN)
	if err != nil {
		t.Fatalf("OpenPostgresReadOnly: %v", err)
	}
	defer r.Close()
	wantOrders(t, r)
	err = store.ExecReadOnly(t.Context(), r, `UPDATE segments SET max_id = 0`)
	if pe, ok := errors.AsType[*pgconn.PgError](err); !ok || pe.Code != "25006" {
		t.Errorf("UPDATE through the read-only handle: error = %v, want SQLSTATE 25006 (read-only transaction)", err)
	}
	if _, err := store.OpenPostgresReadOnly(t.Context(), storetest.PostgresDSN(t)); err == nil ||
		!strings.Contains(err.Error(), "no segments table") {
		t.Errorf("OpenPostgresReadOnly of an empty database: error = %v, want no segments table", err)
	}
}
