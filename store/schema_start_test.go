package store_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// segmentsBeforeStart is schema.sql's segments table as it was before the
// start column: with the format columns.
const segmentsBeforeStart = `CREATE TABLE segments (
  app_tag     VARCHAR(64)  NOT NULL,
  max_id      BIGINT       NOT NULL DEFAULT 0,
  step        BIGINT       NOT NULL,
  description VARCHAR(256) NOT NULL DEFAULT '',
  update_time DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  format      VARCHAR(16)  NOT NULL DEFAULT 'sequential',
  length      INT          NOT NULL DEFAULT 0,
  format_key  VARBINARY(32) NULL,
  PRIMARY KEY (app_tag)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// sqliteBeforeStart is the SQLite store's segments table as it was before
// the start column, with a scrambled row.
const sqliteBeforeStart = `CREATE TABLE segments (
  app_tag     TEXT    NOT NULL PRIMARY KEY,
  max_id      INTEGER NOT NULL DEFAULT 0,
  step        INTEGER NOT NULL,
  description TEXT    NOT NULL DEFAULT '',
  update_time INTEGER NOT NULL DEFAULT 0,
  format      TEXT    NOT NULL DEFAULT 'sequential',
  length      INTEGER NOT NULL DEFAULT 0,
  format_key  BLOB
) STRICT;
INSERT INTO segments (app_tag, max_id, step, format, length, format_key)
VALUES ('scr', 70, 10, 'scrambled', 8, X'0707070707070707070707070707070707070707070707070707070707070707');`

// checkOldScrambled fails t unless the scrambled row written before the
// start column reads back scrambled, with its key and an unknown start:
// a table lacking only start must never be read as one before formats.
func checkOldScrambled(t *testing.T, tags []segment.Tag, err error) {
	t.Helper()
	g := tagNamed(t, tags, err, "scr")
	if g.Format != segment.FormatScrambled || g.Length != 8 || !bytes.Equal(g.FormatKey, scrambledTag.FormatKey) || g.Start != 0 {
		t.Errorf("scr = %+v, want scrambled, length 8, its key, start 0 (unknown)", g)
	}
}

// TestMySQLBeforeStartColumn: a plain start on a segments table with the
// format columns but no start serves every format and creates tags (start
// unknown); -init-schema adds the column, after which new tags record
// their start and old rows stay unknown.
func TestMySQLBeforeStartColumn(t *testing.T) {
	ctx := t.Context()
	dsn := storetest.MySQLDSN(t)
	mysqlRaw(t, dsn, segmentsBeforeStart, `INSERT INTO segments (app_tag, max_id, step, format, length, format_key)
		VALUES ('scr', 70, 10, 'scrambled', 8, REPEAT(CHAR(7), 32))`)
	st, err := store.OpenMySQL(ctx, dsn, store.MySQLOptions{})
	if err != nil {
		t.Fatalf("OpenMySQL without InitSchema on a table before start: %v", err)
	}
	defer st.Close()
	tags, err := st.Tags(ctx)
	checkOldScrambled(t, tags, err)
	fixed := segment.Tag{AppTag: "fixed", Step: 10, Start: 10_000_000, Format: segment.FormatFixedLength, Length: 8}
	if err := st.CreateTag(ctx, fixed); err != nil {
		t.Fatalf("CreateTag(fixed_length) on a table without start: %v", err)
	}
	tags, err = st.Tags(ctx)
	if g := tagNamed(t, tags, err, "fixed"); g.Format != segment.FormatFixedLength || g.MaxID != 9_999_999 || g.Start != 0 {
		t.Errorf("fixed = %+v, want fixed_length, max_id 9999999, start 0 (no column to keep it)", g)
	}

	for i := range 2 {
		up, err := store.OpenMySQL(ctx, dsn, store.MySQLOptions{InitSchema: true})
		if err != nil {
			t.Fatalf("OpenMySQL with InitSchema (#%d): %v", i+1, err)
		}
		up.Close()
	}
	// The handle opened before the ALTER records starts from its next call.
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "seq", Step: 10, Start: 42}); err != nil {
		t.Fatalf("CreateTag after InitSchema: %v", err)
	}
	tags, err = st.Tags(ctx)
	checkOldScrambled(t, tags, err)
	for name, want := range map[string]int64{"fixed": 0, "seq": 42, "test_business": 1} {
		if g := tagNamed(t, tags, err, name); g.Start != want {
			t.Errorf("after InitSchema %s.Start = %d, want %d", name, g.Start, want)
		}
	}
}

// TestSQLiteAddsStartColumn: OpenSQLite adds start to a file from before
// it; the old row keeps its format and key with an unknown start, the
// seeded row and new tags have theirs. The read-only source reads the file
// before and after.
func TestSQLiteAddsStartColumn(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	rawSQLite(t, path, sqliteBeforeStart)

	r, err := store.OpenSQLiteReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := r.Tags(ctx)
	checkOldScrambled(t, tags, err)
	r.Close()

	st, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	tags, err = st.Tags(ctx)
	checkOldScrambled(t, tags, err)
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "seq", Step: 10, Start: 42}); err != nil {
		t.Fatalf("CreateTag: %v", err)
	}
	st.Close()

	r, err = store.OpenSQLiteReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tags, err = r.Tags(ctx)
	checkOldScrambled(t, tags, err)
	for name, want := range map[string]int64{"seq": 42, "test_business": 1} {
		if g := tagNamed(t, tags, err, name); g.Start != want {
			t.Errorf("%s.Start = %d, want %d", name, g.Start, want)
		}
	}
}
