package store_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// segmentsBeforeFormats is schema.sql's segments table as it was before
// number formats.
const segmentsBeforeFormats = `CREATE TABLE segments (
  app_tag     VARCHAR(64)  NOT NULL,
  max_id      BIGINT       NOT NULL DEFAULT 0,
  step        BIGINT       NOT NULL,
  description VARCHAR(256) NOT NULL DEFAULT '',
  update_time DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (app_tag)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// sqliteBeforeFormats is the SQLite store's segments table as it was
// before number formats, with one row.
const sqliteBeforeFormats = `CREATE TABLE segments (
  app_tag     TEXT    NOT NULL PRIMARY KEY,
  max_id      INTEGER NOT NULL DEFAULT 0,
  step        INTEGER NOT NULL,
  description TEXT    NOT NULL DEFAULT '',
  update_time INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO segments (app_tag, max_id, step) VALUES ('orders', 70, 10);`

// wantAddFormats is the statement that adds every format column.
const wantAddFormats = "ALTER TABLE `segments` ADD COLUMN `format` VARCHAR(16) NOT NULL DEFAULT 'sequential', " +
	"ADD COLUMN `length` INT NOT NULL DEFAULT 0, ADD COLUMN `format_key` VARBINARY(32) NULL"

var scrambledTag = segment.Tag{AppTag: "scr", Step: 10, Format: segment.FormatScrambled, Length: 8, FormatKey: bytes.Repeat([]byte{7}, 32)}

// tagNamed returns the row of tags named name, failing t if there is none.
func tagNamed(t *testing.T, tags []segment.Tag, err error, name string) segment.Tag {
	t.Helper()
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	for _, tg := range tags {
		if tg.AppTag == name {
			return tg
		}
	}
	t.Fatalf("Tags = %+v, want %s among them", tags, name)
	return segment.Tag{}
}

// checkOldRow fails t unless the row from before formats reads as it was
// written, sequential.
func checkOldRow(t *testing.T, tags []segment.Tag, err error, maxID int64) {
	t.Helper()
	if g := tagNamed(t, tags, err, "orders"); g.MaxID != maxID || g.Format != segment.FormatSequential || g.Length != 0 || g.FormatKey != nil {
		t.Errorf("orders = %+v, want max_id %d, sequential, no length or key", g, maxID)
	}
}

// TestMySQLBeforeFormatColumns: a plain start on a segments table from
// before formats serves it as all-sequential; a fixed_length or scrambled
// tag is refused naming the ALTER TABLE that adds the columns, which then
// takes effect on the handle already open.
func TestMySQLBeforeFormatColumns(t *testing.T) {
	ctx := t.Context()
	dsn := storetest.MySQLDSN(t)
	mysqlRaw(t, dsn, segmentsBeforeFormats, `INSERT INTO segments (app_tag, max_id, step) VALUES ('orders', 70, 10)`)
	st, err := store.OpenMySQL(ctx, dsn, store.MySQLOptions{})
	if err != nil {
		t.Fatalf("OpenMySQL without InitSchema on a table before formats: %v", err)
	}
	defer st.Close()
	tags, err := st.Tags(ctx)
	checkOldRow(t, tags, err, 70)
	if f, err := st.Fetch(ctx, "orders", segment.MaxUsableID, 0); err != nil || f.MaxID != 80 {
		t.Errorf("Fetch(orders) = %+v, %v; want max_id 80", f, err)
	}
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "seq", Step: 10, Format: segment.FormatSequential}); err != nil {
		t.Errorf("CreateTag(sequential): %v", err)
	}

	err = st.CreateTag(ctx, scrambledTag)
	if !errors.Is(err, segment.ErrFormatUnsupported) {
		t.Fatalf("CreateTag(scrambled) = %v, want %v", err, segment.ErrFormatUnsupported)
	}
	// In bulk too, before any row is written.
	created, err := st.CreateTags(ctx, []segment.Tag{{AppTag: "seq2", Step: 10}, scrambledTag})
	if !errors.Is(err, segment.ErrFormatUnsupported) || created != nil {
		t.Fatalf("CreateTags(sequential, scrambled) = %v, %v; want nothing, %v", created, err, segment.ErrFormatUnsupported)
	}
	// The rows changed since a moment are found without the index the
	// table lacks, as without the columns.
	if rows, _, err := st.TagsSince(ctx, time.Now().Add(-time.Hour), "", 0); err != nil || len(rows) != 2 ||
		rows[0].AppTag != "orders" || rows[1].AppTag != "seq" {
		t.Errorf("TagsSince(an hour ago) = %+v, %v; want orders (fetched) and seq (created)", rows, err)
	}
	// Through the allocator, the refusal keeps its words (not "unavailable").
	a, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	_, err = a.CreateTag(ctx, segment.NewTag{AppTag: "fixed", Step: 10, Format: segment.FormatFixedLength, Length: 8})
	e, ok := errs.Describe(err)
	if !ok {
		t.Fatalf("Allocator.CreateTag(fixed_length): no refusal")
	}
	kind, msg := e.Kind, e.Error()
	if kind != errs.BadRequest || !strings.HasPrefix(msg, "invalid format: this store keeps only sequential tags: ") ||
		!strings.Contains(msg, "-init-schema") || !strings.Contains(msg, wantAddFormats) {
		t.Errorf("Allocator.CreateTag(fixed_length) = %s %q, want invalid, naming -init-schema and %q", kind, msg, wantAddFormats)
	}
	tags, err = st.Tags(ctx)
	if err != nil || len(tags) != 2 {
		t.Errorf("after the refusals Tags = %+v, %v; want orders and seq only", tags, err)
	}

	// What the message says to run adds the columns; the open handle sees
	// them at its next call.
	_, paste, ok := strings.Cut(msg, "or run: ")
	if !ok {
		t.Fatalf("message %q names no statement to run", msg)
	}
	mysqlRaw(t, dsn, strings.TrimSuffix(paste, ";"))
	if err := st.CreateTag(ctx, scrambledTag); err != nil {
		t.Fatalf("CreateTag(scrambled) after the ALTER TABLE: %v", err)
	}
	tags, err = st.Tags(ctx)
	checkOldRow(t, tags, err, 80)
	if g := tagNamed(t, tags, err, "scr"); g.Format != segment.FormatScrambled || g.Length != 8 || !bytes.Equal(g.FormatKey, scrambledTag.FormatKey) {
		t.Errorf("scr = %+v, want scrambled, length 8, its key", g)
	}
	// migrate's source reads the formats too.
	r, err := store.OpenMySQLReadOnly(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tags, err = r.Tags(ctx)
	if g := tagNamed(t, tags, err, "scr"); !bytes.Equal(g.FormatKey, scrambledTag.FormatKey) {
		t.Errorf("read-only scr = %+v, want its key", g)
	}
}

// TestMySQLInitSchemaAddsFormatColumns: -init-schema adds the columns to a
// table from before formats, keeping its rows (sequential), and is a no-op
// the second time.
func TestMySQLInitSchemaAddsFormatColumns(t *testing.T) {
	ctx := t.Context()
	dsn := storetest.MySQLDSN(t)
	mysqlRaw(t, dsn, segmentsBeforeFormats, `INSERT INTO segments (app_tag, max_id, step) VALUES ('orders', 70, 10)`)
	// What each start reports: the changes, then none.
	wantReports := [][]string{
		{"added columns format, length, format_key, start, format_spec to segments", "created table segment_periods",
			"created table worker_leases", "created table worker_layouts", "created table alloc_tokens", "created table audit_log",
			"created table idalloc_region", "added index segments_update_time (update_time) to segments"},
		nil,
	}
	for i, want := range wantReports {
		var reports []string
		st, err := store.OpenMySQL(ctx, dsn, store.MySQLOptions{InitSchema: true,
			Report: func(change string) { reports = append(reports, change) }})
		if err != nil {
			t.Fatalf("OpenMySQL with InitSchema (#%d): %v", i+1, err)
		}
		defer st.Close()
		tags, err := st.Tags(ctx)
		checkOldRow(t, tags, err, 70)
		if !slices.Equal(reports, want) {
			t.Errorf("OpenMySQL with InitSchema (#%d) reported %q, want %q", i+1, reports, want)
		}
	}
	st, err := store.OpenMySQL(ctx, dsn, store.MySQLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateTag(ctx, scrambledTag); err != nil {
		t.Fatalf("CreateTag(scrambled) after InitSchema: %v", err)
	}
	tags, err := st.Tags(ctx)
	if g := tagNamed(t, tags, err, "scr"); g.Format != segment.FormatScrambled || !bytes.Equal(g.FormatKey, scrambledTag.FormatKey) {
		t.Errorf("scr = %+v, want scrambled with its key", g)
	}
	tagNamed(t, tags, err, "test_business") // InitSchema seeded it
}

// TestSQLiteAddsFormatColumns: OpenSQLite adds the columns to a file from
// before formats, whose rows stay sequential; the read-only source reads
// such a file without them.
func TestSQLiteAddsFormatColumns(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	rawSQLite(t, path, sqliteBeforeFormats)

	r, err := store.OpenSQLiteReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := r.Tags(ctx)
	checkOldRow(t, tags, err, 70)
	r.Close()

	for i := range 2 {
		st, err := store.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatalf("OpenSQLite (#%d): %v", i+1, err)
		}
		tags, err := st.Tags(ctx)
		checkOldRow(t, tags, err, 70)
		if i == 0 {
			if err := st.CreateTag(ctx, scrambledTag); err != nil {
				t.Fatalf("CreateTag(scrambled): %v", err)
			}
		} else if g := tagNamed(t, tags, err, "scr"); !bytes.Equal(g.FormatKey, scrambledTag.FormatKey) {
			t.Errorf("reopened, scr = %+v, want its key", g)
		}
		st.Close()
	}
}
