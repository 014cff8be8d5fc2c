package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/segment"
)

// The number-format columns of segments (API.md §3, §7): a tag's format,
// its digit count, and a scrambled tag's secret key. A segments table made
// before formats lacks them; its rows are sequential tags, and stay so.
//
// A MySQL table without them is not refused at start, unlike TIMESTAMP
// columns (schema_check.go): those break every fetch in 2038, while
// missing format columns take nothing away from the tags there are. So a
// fleet can roll the new version out before anyone touches the schema; only
// creating a fixed_length or scrambled tag fails, with
// segment.ErrFormatUnsupported naming the ALTER TABLE that adds them (which
// -init-schema runs). The store looks for the columns again at each tag
// list and create until it finds them, so instances started before the
// ALTER read the formats from their next tag-list reload on; a row can only
// be non-sequential once the columns exist, so no instance ever serves one
// in the wrong format (but a binary from before formats would: create
// fixed_length or scrambled tags only once every instance runs this one).

// formatColumn is one number-format column and its definition per driver.
type formatColumn struct {
	name          string
	mysql, sqlite string
}

var formatColumns = []formatColumn{
	{"format", "VARCHAR(16) NOT NULL DEFAULT 'sequential'", "TEXT NOT NULL DEFAULT 'sequential'"},
	{"length", "INT NOT NULL DEFAULT 0", "INTEGER NOT NULL DEFAULT 0"},
	{"format_key", "VARBINARY(32) NULL", "BLOB"},
}

// Column lists of segments, per dialect: the names present among
// formatColumns.
const (
	mysqlFormatColumnsQuery = `SELECT LOWER(COLUMN_NAME) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'segments'
			AND LOWER(COLUMN_NAME) IN ('format', 'length', 'format_key')`
	sqliteFormatColumnsQuery = `SELECT LOWER(name) FROM pragma_table_info('segments')
		WHERE LOWER(name) IN ('format', 'length', 'format_key')`
)

// missingFormatColumns lists the number-format columns segments lacks.
func missingFormatColumns(ctx context.Context, q sqlx.QueryerContext, query string) ([]formatColumn, error) {
	var have []string
	if err := sqlx.SelectContext(ctx, q, &have, query); err != nil {
		return nil, fmt.Errorf("check the format columns: %w", err)
	}
	var missing []formatColumn
	for _, c := range formatColumns {
		if !slices.Contains(have, c.name) {
			missing = append(missing, c)
		}
	}
	return missing, nil
}

// mysqlFormatAlter is the one ALTER TABLE that adds cols to a MySQL
// segments table. On InnoDB (MySQL 8.0, MariaDB 10.3 and later) adding
// columns at the end with a constant default is instant: no table copy.
func mysqlFormatAlter(cols []formatColumn) string {
	adds := make([]string, len(cols))
	for i, c := range cols {
		adds[i] = "ADD COLUMN " + quoteIdent(c.name) + " " + c.mysql
	}
	return "ALTER TABLE `segments` " + strings.Join(adds, ", ")
}

// missingFormats lists the format columns segments lacks, looking again
// until it has found them all once (columns are never dropped); none when
// the table has them.
func (d *db) missingFormats(ctx context.Context) ([]formatColumn, error) {
	if d.formats.Load() {
		return nil, nil
	}
	missing, err := missingFormatColumns(ctx, d.x, d.dialect.formatColumnsQuery)
	if err == nil && len(missing) == 0 {
		d.formats.Store(true)
	}
	return missing, err
}

// formatsUnsupported is CreateTag's refusal of a fixed_length or scrambled
// tag on a MySQL segments table that lacks the missing format columns.
func formatsUnsupported(missing []formatColumn) error {
	return segment.FormatUnsupported("its segments table predates number formats; start idalloc once with " +
		"-init-schema, or run: " + mysqlFormatAlter(missing) + ";")
}

// upgradeFormats adds the missing format columns to a MySQL segments
// table. Instances running -init-schema at once may race to add them; a
// failed ALTER is an error only if the columns are still missing after it.
func (m *MySQL) upgradeFormats(ctx context.Context) error {
	missing, err := missingFormatColumns(ctx, m.x, mysqlFormatColumnsQuery)
	if err != nil || len(missing) == 0 {
		return err
	}
	stmt := mysqlFormatAlter(missing)
	if _, err := m.x.ExecContext(ctx, stmt); err != nil {
		if still, checkErr := m.missingFormats(ctx); checkErr != nil || len(still) > 0 {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// addSQLiteFormats adds the missing format columns to a SQLite segments
// table, inside OpenSQLite's schema transaction. SQLite adds one column per
// statement; a column added with a constant default rewrites nothing.
func addSQLiteFormats(ctx context.Context, tx *sqlx.Tx) error {
	missing, err := missingFormatColumns(ctx, tx, sqliteFormatColumnsQuery)
	if err != nil {
		return err
	}
	for _, c := range missing {
		stmt := "ALTER TABLE segments ADD COLUMN " + c.name + " " + c.sqlite
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}
