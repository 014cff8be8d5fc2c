package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// beforeDated makes a database of d as the version before dated tags left
// it: every table and column but format_spec and segment_periods.
func beforeDated(t *testing.T, d storetest.Driver) storetest.DB {
	t.Helper()
	db := d.NewDB(t)
	db.Exec(t, "ALTER TABLE segments DROP COLUMN format_spec", "DROP TABLE segment_periods")
	return db
}

// datedTag is a dated tag as the allocator creates it.
var datedTag = segment.Tag{AppTag: "ord", Step: 10, Start: 1, Format: segment.FormatDated, Length: 6,
	FormatSpec: dated.Settings{}.Spec()}

// openStore opens db as a start does, with or without -init-schema, and
// returns what InitSchema reported.
func openStore(t *testing.T, db storetest.DB, initSchema bool) (store.Store, []string, error) {
	t.Helper()
	var reports []string
	st, err := store.Open(t.Context(), db.Driver, db.DSN, store.Options{InitSchema: initSchema,
		Report: func(change string) { reports = append(reports, change) }})
	if err == nil {
		t.Cleanup(func() { _ = st.Close() })
	}
	return st, reports, err
}

// TestServerDatabaseBeforeDated: on MySQL and PostgreSQL, a database from
// before dated tags starts as it is (an upgrade adds nothing it needs);
// a dated tag is refused naming the statements that add format_spec and
// segment_periods, which then take effect on the open handle; a period
// fetch says the table is missing; once segments holds a dated tag, a
// start without the table is refused naming it; -init-schema adds both
// and then has nothing left to do.
func TestServerDatabaseBeforeDated(t *testing.T) {
	for _, d := range []storetest.Driver{storetest.MySQL(), storetest.Postgres()} {
		t.Run(d.Name, func(t *testing.T) {
			ctx := t.Context()
			db := beforeDated(t, d)
			r := db.OpenReadOnly(t)
			if ps, err := r.Periods(ctx); err != nil || ps != nil {
				t.Errorf("read-only Periods = %+v, %v; want none", ps, err)
			}
			tags, err := r.Tags(ctx)
			if g := tagNamed(t, tags, err, "test_business"); g.FormatSpec != "" || g.Start != 1 {
				t.Errorf("read-only test_business = %+v, want start 1, no format_spec", g)
			}

			st, _, err := openStore(t, db, false)
			if err != nil {
				t.Fatalf("a start without -init-schema and without dated tags: %v", err)
			}
			if _, err := st.FetchPeriod(ctx, "test_business", 20261126, 1, 999, 0); !errors.Is(err, store.ErrMissingTables) ||
				!strings.Contains(err.Error(), "segment_periods") {
				t.Errorf("FetchPeriod without segment_periods: error = %v, want %v naming it", err, store.ErrMissingTables)
			}
			if err := st.CreateTag(ctx, segment.Tag{AppTag: "seq", Step: 10}); err != nil {
				t.Errorf("CreateTag(sequential): %v", err)
			}
			checkDatedRefusedThenPasted(t, db, st)

			// An operator's row: segments holds a dated tag without its counters.
			db.Exec(t, "DROP TABLE IF EXISTS segment_periods",
				"INSERT INTO segments (app_tag, max_id, step, format, length, start) VALUES ('legacy', 0, 10, 'dated', 6, 1)")
			_, _, err = openStore(t, db, false)
			if !errors.Is(err, store.ErrMissingTables) || !strings.Contains(err.Error(), "segment_periods") ||
				!strings.Contains(err.Error(), "-init-schema") || !strings.Contains(err.Error(), "dated tags") {
				t.Errorf("a start without segment_periods while segments holds a dated tag: error = %v, "+
					"want %v naming the table, -init-schema and the dated tags", err, store.ErrMissingTables)
			}

			// format_spec was added by hand above, as the refusal said.
			wantReports := [][]string{{"created table segment_periods"}, nil}
			for i, want := range wantReports {
				if _, reports, err := openStore(t, db, true); err != nil || !slices.Equal(reports, want) {
					t.Errorf("start with -init-schema #%d: reported %q, %v; want %q", i+1, reports, err, want)
				}
			}
			if f, err := st.FetchPeriod(ctx, "legacy", 20261126, 1, 999, 0); err != nil || f.MaxID != 10 {
				t.Errorf("FetchPeriod after -init-schema, on the handle opened before = %+v, %v; want (0, 10]", f, err)
			}
			tags, err = st.Tags(ctx)
			if g := tagNamed(t, tags, err, "legacy"); g.Format != segment.FormatDated || g.FormatSpec != "" {
				t.Errorf("legacy = %+v, want dated with the empty format_spec the column was added with", g)
			}
		})
	}
}

// checkDatedRefusedThenPasted: CreateTag refuses a dated tag on st's
// database from before dated tags, naming -init-schema and statements
// that, run as they are, let the same handle create it.
func checkDatedRefusedThenPasted(t *testing.T, db storetest.DB, st store.Store) {
	t.Helper()
	err := st.CreateTag(t.Context(), datedTag)
	if !errors.Is(err, segment.ErrFormatUnsupported) {
		t.Fatalf("CreateTag(dated) = %v, want %v", err, segment.ErrFormatUnsupported)
	}
	msg := err.Error()
	_, paste, ok := strings.Cut(msg, "or run: ")
	if !strings.Contains(msg, "-init-schema") || !ok || !strings.Contains(paste, "format_spec") ||
		!strings.Contains(paste, "CREATE TABLE IF NOT EXISTS segment_periods") {
		t.Fatalf("CreateTag(dated) = %q, want it to name -init-schema and the statements adding format_spec and segment_periods", msg)
	}
	// Split as an operator's client would run them, one at a time.
	for stmt := range strings.SplitSeq(strings.TrimSuffix(paste, ";"), "; ") {
		db.Exec(t, stmt)
	}
	if err := st.CreateTag(t.Context(), datedTag); err != nil {
		t.Fatalf("CreateTag(dated) after the statements: %v", err)
	}
	tags, err := st.Tags(t.Context())
	if g := tagNamed(t, tags, err, "ord"); g.FormatSpec != datedTag.FormatSpec {
		t.Errorf("ord = %+v, want format_spec %q", g, datedTag.FormatSpec)
	}
}

// TestSQLiteBeforeDated: OpenSQLite adds format_spec and segment_periods
// to a file from before them, whose rows keep what they held; the
// read-only source reads such a file as it is.
func TestSQLiteBeforeDated(t *testing.T) {
	ctx := t.Context()
	db := beforeDated(t, storetest.SQLite())
	r := db.OpenReadOnly(t)
	if ps, err := r.Periods(ctx); err != nil || ps != nil {
		t.Errorf("read-only Periods of the old file = %+v, %v; want none", ps, err)
	}
	tags, err := r.Tags(ctx)
	if g := tagNamed(t, tags, err, "test_business"); g.FormatSpec != "" || g.Start != 1 {
		t.Errorf("read-only test_business = %+v, want start 1, no format_spec", g)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	st := db.Open(t)
	if f, err := st.FetchPeriod(ctx, "test_business", 20261126, 5, 999_999, 0); err != nil || f.MaxID != 100_004 {
		t.Errorf("FetchPeriod on the upgraded file = %+v, %v; want (4, 100004]", f, err)
	}
	if err := st.CreateTag(ctx, datedTag); err != nil {
		t.Fatalf("CreateTag(dated) on the upgraded file: %v", err)
	}
	tags, err = db.OpenReadOnly(t).Tags(ctx)
	if g := tagNamed(t, tags, err, "test_business"); g.Start != 1 || g.MaxID != 0 {
		t.Errorf("test_business after the upgrade = %+v, want start 1, max_id 0", g)
	}
}
