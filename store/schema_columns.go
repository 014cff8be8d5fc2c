package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/segment"
)

// The columns segments gained after the seed's (docs/api.md §3, §7, §11): the
// number formats (a tag's format, its digit count, a scrambled tag's secret
// key), start, a tag's first ID as created, and format_spec, a dated tag's
// settings. A segments table made before them lacks some or all; its rows
// are sequential tags, and stay so, and their start is unknown (NULL:
// nothing left in a used row says what its first ID was).
//
// A MySQL or PostgreSQL table without them is not refused at start, unlike
// TIMESTAMP columns (schema_check.go): those break every fetch in 2038, while
// missing columns take nothing away from the tags there are. So a fleet
// can roll the new version out before anyone touches the schema; only
// creating a fixed_length or scrambled tag fails while the format columns
// are missing (a dated tag while format_spec or the segment_periods table
// is), with segment.ErrFormatUnsupported naming the statements that add
// them (which -init-schema runs), and tags created while start is missing
// have an unknown start. The store looks for the columns again
// at each tag list and create until it finds them all, so instances
// started before the ALTER read the formats from their next tag-list
// reload on; a row can only be non-sequential once the columns exist, so
// no instance ever serves one in the wrong format (but a binary from
// before formats would: create fixed_length or scrambled tags only once
// every instance runs this one).

// addedColumn is one column added to segments, and its definition per
// driver.
type addedColumn struct {
	name                    string
	mysql, sqlite, postgres string
}

// addedColumns in the order schema.sql has them: an ALTER adds them at the
// end of the table in this order, so an upgraded table matches a new one.
var addedColumns = []addedColumn{
	{"format", "VARCHAR(16) NOT NULL DEFAULT 'sequential'", "TEXT NOT NULL DEFAULT 'sequential'",
		"VARCHAR(16) NOT NULL DEFAULT 'sequential'"},
	{"length", "INT NOT NULL DEFAULT 0", "INTEGER NOT NULL DEFAULT 0", "INTEGER NOT NULL DEFAULT 0"},
	{"format_key", "VARBINARY(32) NULL", "BLOB", "BYTEA NULL"},
	// NULL, not a default: a row from before the column has no known start.
	{"start", "BIGINT NULL", "INTEGER", "BIGINT NULL"},
	// As wide as a dated tag's settings could ever need (a 12-character
	// prefix and the longest IANA zone names are under a third of it), so
	// the column never decides which settings are allowed.
	{"format_spec", "VARCHAR(255) NOT NULL DEFAULT ''", "TEXT NOT NULL DEFAULT ''", "VARCHAR(255) NOT NULL DEFAULT ''"},
}

// maxFormatSpec is format_spec's width in characters, which CreateTag
// enforces itself: SQLite's TEXT has none, and a MySQL server outside
// strict mode would cut a longer value short without an error.
const maxFormatSpec = 255

// Column lists of segments, per dialect: the names present among
// addedColumns.
const (
	mysqlAddedColumnsQuery = `SELECT LOWER(COLUMN_NAME) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'segments'
			AND LOWER(COLUMN_NAME) IN ('format', 'length', 'format_key', 'start', 'format_spec')`
	sqliteAddedColumnsQuery = `SELECT LOWER(name) FROM pragma_table_info('segments')
		WHERE LOWER(name) IN ('format', 'length', 'format_key', 'start', 'format_spec')`
	// current_schema(): where CREATE TABLE IF NOT EXISTS put the table
	// and where an unqualified name finds it first.
	postgresAddedColumnsQuery = `SELECT LOWER(column_name) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'segments'
			AND LOWER(column_name) IN ('format', 'length', 'format_key', 'start', 'format_spec')`
)

// missingColumns lists the added columns segments lacks.
func missingColumns(ctx context.Context, q sqlx.QueryerContext, query string) ([]addedColumn, error) {
	var have []string
	if err := sqlx.SelectContext(ctx, q, &have, query); err != nil { // no arguments: no rebinding
		return nil, fmt.Errorf("check the columns of segments: %w", err)
	}
	var missing []addedColumn
	for _, c := range addedColumns {
		if !slices.Contains(have, c.name) {
			missing = append(missing, c)
		}
	}
	return missing, nil
}

// segmentColumns says which added columns a segments table has.
type segmentColumns struct {
	formats    bool // format, length and format_key
	start      bool
	formatSpec bool
}

func columnsOf(missing []addedColumn) segmentColumns {
	has := func(name string) bool {
		return !slices.ContainsFunc(missing, func(c addedColumn) bool { return c.name == name })
	}
	return segmentColumns{formats: has("format") && has("length") && has("format_key"), start: has("start"),
		formatSpec: has("format_spec")}
}

// mysqlAddColumns is the one ALTER TABLE that adds cols to a MySQL
// segments table. On InnoDB (MySQL 8.0, MariaDB 10.3 and later) adding
// columns at the end with a constant default is instant: no table copy.
func mysqlAddColumns(cols []addedColumn) string {
	adds := make([]string, len(cols))
	for i, c := range cols {
		adds[i] = "ADD COLUMN " + quoteIdent(c.name) + " " + c.mysql
	}
	return "ALTER TABLE `segments` " + strings.Join(adds, ", ")
}

// postgresAddColumns is the one ALTER TABLE that adds cols to a
// PostgreSQL segments table. Since PostgreSQL 11 a column added with a
// constant default rewrites nothing; IF NOT EXISTS lets the statement as
// pasted by an operator meet an instance's -init-schema that ran first.
func postgresAddColumns(cols []addedColumn) string {
	adds := make([]string, len(cols))
	for i, c := range cols {
		adds[i] = "ADD COLUMN IF NOT EXISTS " + c.name + " " + c.postgres
	}
	return "ALTER TABLE segments " + strings.Join(adds, ", ")
}

// sqliteAddColumns are the ALTER TABLEs that add cols to a SQLite
// segments table, one per column as SQLite requires.
func sqliteAddColumns(cols []addedColumn) string {
	stmts := make([]string, len(cols))
	for i, c := range cols {
		stmts[i] = "ALTER TABLE segments ADD COLUMN " + c.name + " " + c.sqlite
	}
	return strings.Join(stmts, "; ")
}

// missingColumns lists the added columns segments lacks, looking again
// until it has found them all once (columns are never dropped); none when
// the table has them.
func (d *db) missingColumns(ctx context.Context) ([]addedColumn, error) {
	if d.complete.Load() {
		return nil, nil
	}
	missing, err := missingColumns(ctx, d.x, d.dialect.addedColumnsQuery)
	if err == nil && len(missing) == 0 {
		d.complete.Store(true)
	}
	return missing, err
}

// formatsUnsupported is CreateTag's refusal of a fixed_length or scrambled
// tag on a segments table that lacks the format columns; the ALTER it
// names (in the dialect's words) adds every missing column.
func formatsUnsupported(d dialect, missing []addedColumn) error {
	return segment.FormatUnsupported("its segments table predates number formats; start idalloc once with " +
		"-init-schema, or run: " + d.addColumns(missing) + ";")
}

// upgradeColumns adds the missing columns to the segments table through e,
// if there is one (-init-schema on MySQL and PostgreSQL). Instances
// running -init-schema at once may race to add them; a failed ALTER is an
// error only if columns are still missing after it.
func (d *db) upgradeColumns(ctx context.Context, e sqlx.ExtContext, report func(string)) error {
	var tables int
	err := sqlx.GetContext(ctx, e, &tables, d.q(d.dialect.tableExists), "segments")
	if err != nil || tables == 0 {
		return err
	}
	missing, err := missingColumns(ctx, e, d.dialect.addedColumnsQuery)
	if err != nil || len(missing) == 0 {
		return err
	}
	stmt := d.dialect.addColumns(missing)
	if _, err := e.ExecContext(ctx, stmt); err != nil {
		if still, checkErr := missingColumns(ctx, e, d.dialect.addedColumnsQuery); checkErr != nil || len(still) > 0 {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		return nil // another instance added them
	}
	names := make([]string, len(missing))
	for i, c := range missing {
		names[i] = c.name
	}
	report("added columns " + strings.Join(names, ", ") + " to segments")
	return nil
}

// addSQLiteColumns adds the missing columns to a SQLite segments table,
// inside OpenSQLite's schema transaction. SQLite adds one column per
// statement; a column added with a constant default rewrites nothing.
func addSQLiteColumns(ctx context.Context, tx *sqlx.Tx) error {
	missing, err := missingColumns(ctx, tx, sqliteAddedColumnsQuery)
	if err != nil {
		return err
	}
	for _, c := range missing {
		stmt := sqliteAddColumns([]addedColumn{c})
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}
