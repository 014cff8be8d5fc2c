package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/segment"
)

// periodsTable keeps the counters of dated tags, one row per (tag, period
// stamp); see schema.sql.
//
// It is a table newer than the others, and a start does not require it:
// an existing deployment upgraded to this version has no dated tags, and
// refusing its start until someone runs -init-schema would turn an
// upgrade that changes nothing for it into an outage. So, as with the
// format columns (schema_columns.go), -init-schema creates it, CreateTag
// refuses a dated tag while it (or format_spec) is missing, naming the
// statements that add them, and a period fetch without it says the table
// is missing. The one case that does refuse a start is a segments table
// that holds dated tags while segment_periods is missing (a restore of
// segments alone, a table dropped by hand): their counters are gone, and
// serving them would begin every current period again at its start.
const periodsTable = "segment_periods"

// tableStatement is the CREATE TABLE of table in schema, on one line, as
// a refusal names it for an operator to paste.
func tableStatement(schema, table string) string {
	for _, s := range splitStatements(schema) {
		if strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS "+table+" (") {
			one := strings.Join(strings.Fields(s), " ")
			return strings.NewReplacer("( ", "(", " )", ")").Replace(one)
		}
	}
	panic("store: the schema creates no table " + table) // a schema file edited wrongly; its tests say so
}

// canKeepDated reports whether the database can keep a dated tag: the
// format columns, format_spec and the segment_periods table are there.
// missing are the added columns segments lacks. The refusal is
// segment.ErrFormatUnsupported naming, in the dialect's words, what adds
// the rest.
func (d *db) canKeepDated(ctx context.Context, missing []addedColumn) error {
	cols := columnsOf(missing)
	periods, err := d.tableExists(ctx, d.x, periodsTable)
	if err != nil || (cols.formats && cols.formatSpec && periods) {
		return err
	}
	var fix []string
	if len(missing) > 0 {
		fix = append(fix, d.dialect.addColumns(missing))
	}
	if !periods {
		fix = append(fix, d.dialect.createPeriods)
	}
	return segment.FormatUnsupported("its database predates dated tags; start idalloc once with -init-schema, " +
		"or run: " + strings.Join(fix, "; ") + ";")
}

// checkTables refuses a database without a segments table, the one every
// start reads (an empty database, most often), which would otherwise fail
// at its first read with error 1146 (42P01) and no fix named. A database
// that has it but lacks the worker tables or segment_periods, made before
// them, is opened as before, unless segments holds dated tags while
// segment_periods is missing (see periodsTable).
func (d *db) checkTables(ctx context.Context) error {
	missing, err := d.missingTables(ctx, d.x)
	switch {
	case err != nil:
		return err
	case slices.Contains(missing, "segments"):
		return d.missingTablesError(missing)
	case !slices.Contains(missing, periodsTable):
		return nil
	}
	n, err := datedTags(ctx, d.x, d.dialect.addedColumnsQuery)
	if err != nil || n == 0 {
		return err
	}
	return fmt.Errorf("%w (segments holds dated tags, %d, whose period counters it keeps: if it was lost rather "+
		"than never made, the numbers their current periods issued will be issued again unless those counters "+
		"are moved past them)", d.missingTablesError([]string{periodsTable}), n)
}

// datedTags counts the dated rows of segments; none on a table without
// the format column.
func datedTags(ctx context.Context, q sqlx.QueryerContext, columnsQuery string) (int, error) {
	missing, err := missingColumns(ctx, q, columnsQuery)
	if err != nil || !columnsOf(missing).formats {
		return 0, err
	}
	var n int
	// A literal, not an argument: without the dialect here, a ? could
	// not be rebound to PostgreSQL's $1.
	err = sqlx.GetContext(ctx, q, &n, `SELECT COUNT(*) FROM segments WHERE format = '`+string(segment.FormatDated)+`'`)
	if err != nil {
		return 0, fmt.Errorf("count dated tags: %w", err)
	}
	return n, nil
}

// periodsMissing is err, from a statement on segment_periods, as
// ErrMissingTables when the table is not there (a MySQL or PostgreSQL
// database made before it and opened without -init-schema), so the
// caller learns the fix rather than the engine's code. Asked only after a
// failure: the database answers which tables it has, whatever its engine
// calls the error.
func (d *db) periodsMissing(ctx context.Context, err error) error {
	if errors.Is(err, segment.ErrUnknownTag) || errors.Is(err, segment.ErrExhausted) || ctx.Err() != nil {
		return err // answers, not failures: the statements ran
	}
	if exists, qerr := d.tableExists(ctx, d.x, periodsTable); qerr == nil && !exists {
		return d.missingTablesError([]string{periodsTable})
	}
	return err
}
