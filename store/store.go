// Package store implements segment.Store, segment.PeriodStore and
// workerlease.Store on SQL databases: MySQL (also MariaDB, TiDB, Vitess)
// through go-sql-driver/mysql, PostgreSQL through jackc/pgx, and an
// embedded SQLite file through modernc.org/sqlite (pure Go, no cgo).
//
// Every driver runs the same statements apart from a few dialect fragments,
// so they behave alike, and package storetest holds the conformance suite
// they all pass. A new engine is one dialect value and its opener. The
// guarantees: every write that decides who owns something (a segment
// range, a dated tag's range of one period, a worker lease) is a single
// compare-and-set statement that commits on its own and whose
// rows-affected alone proves the outcome, so a transaction silently
// aborted around it (as a multi-primary cluster such as Galera may do to
// the loser of a certification race) can never hand out a range or a
// lease twice; no result is trusted from a read-back after a write or
// from a lock. Expiry is judged by the database's clock, never the
// caller's. A lost race is retried at once (see retryRaces).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/workerlease"
	"github.com/jmoiron/sqlx"
)

var (
	_ segment.Store     = (*MySQL)(nil)
	_ workerlease.Store = (*MySQL)(nil)
	_ segment.Store     = (*SQLite)(nil)
	_ workerlease.Store = (*SQLite)(nil)
	_ segment.Store     = (*Postgres)(nil)
	_ workerlease.Store = (*Postgres)(nil)

	_ segment.PeriodStore = (*MySQL)(nil)
	_ segment.PeriodStore = (*SQLite)(nil)
	_ segment.PeriodStore = (*Postgres)(nil)
)

// dialect is what differs between the drivers. Statements are written once,
// with ? for each argument and placeholders that expand replaces, and every
// statement the store runs goes through db.q, which expands it and then
// rewrites each ? into the driver's own marker ($1, $2, ... on PostgreSQL):
//
//	{now}        the database's current time, in the column's representation
//	{now+ms}     {now} plus the next ? parameter, in milliseconds
//	{greatest}   the two-argument maximum function
//	{for update} a row lock for a read inside a transaction, where needed
type dialect struct {
	expand *strings.Replacer
	// isDuplicate reports a primary-key violation.
	isDuplicate func(error) bool
	// isLostRace reports an error meaning a concurrent writer won the row,
	// so the caller may look again (a duplicate key, a deadlock victim, a
	// certification failure on a multi-primary cluster).
	isLostRace func(error) bool
	// addedColumnsQuery lists which of the columns added to segments since
	// the seed's exist (schema_columns.go).
	addedColumnsQuery string
	// addColumns is the statement that adds cols to segments, as
	// -init-schema runs it and a refusal names it (schema_columns.go).
	addColumns func(cols []addedColumn) string
	// createPeriods is the CREATE TABLE of segment_periods, as a refusal
	// of a dated tag names it (schema_periods.go).
	createPeriods string
	// timeArg is a time as an argument compared with a time column, in
	// the column's representation.
	timeArg func(time.Time) any
	// tableExists counts the tables named by its one argument.
	tableExists string
	// schemaByHand says how an operator applies the schema by hand, for the
	// error that finds tables missing.
	schemaByHand string
	// oneWriter: the database runs one write transaction at a time (SQLite).
	// Acquire then looks and claims in one transaction, which costs no
	// concurrency there and means no caller ever loses a race. On MySQL the
	// same would hold row locks across round trips and queue every loser
	// behind them, so there each statement commits on its own (as on
	// PostgreSQL).
	oneWriter bool
}

// db is the SQL shared by every driver; each embeds it.
type db struct {
	x          *sqlx.DB
	dialect    dialect
	onConflict atomic.Pointer[func(op string)] // see ObserveConflicts
	// complete: segments has every added column (once true, for good;
	// see missingColumns).
	complete atomic.Bool
}

// tableExists reports whether table exists, by a query each dialect
// answers (information_schema on MySQL and PostgreSQL, sqlite_master on
// SQLite).
func (d *db) tableExists(ctx context.Context, q sqlx.QueryerContext, table string) (bool, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, d.q(d.dialect.tableExists), table)
	return n > 0, err
}

// q is template as the driver runs it: the dialect's placeholders expanded,
// and each ? rewritten to the driver's argument marker (sqlx knows it from
// the driver's name: ? for mysql and sqlite, $n for pgx). A statement that
// skips q runs on MySQL and SQLite and fails on PostgreSQL, which the
// conformance suite shows.
func (d *db) q(template string) string { return d.x.Rebind(d.dialect.expand.Replace(template)) }

// Ping reports whether the database answers.
func (d *db) Ping(ctx context.Context) error {
	if err := d.x.PingContext(ctx); err != nil {
		return fmt.Errorf("ping store: %w", err)
	}
	return nil
}

// Close closes the connection pool; calling it again does nothing.
func (d *db) Close() error { return d.x.Close() }

// inTx runs fn in one transaction and commits only if fn succeeded, so
// whatever fn read is trusted only once the commit is known to have worked.
// An error from fn rolls back and is returned as is, for errors.Is.
func (d *db) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := d.x.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		// ErrTxDone: the driver already ended it (context canceled, or
		// MySQL rolled back a deadlock victim); nothing more to undo.
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// execOne runs a compare-and-set statement and reports whether it matched
// exactly one row. MySQL counts matched rather than changed rows here
// because OpenMySQL sets clientFoundRows; PostgreSQL and SQLite always do.
func execOne(ctx context.Context, e sqlx.ExecerContext, query string, args ...any) (bool, error) {
	return execRows(ctx, e, 1, query, args...)
}

// execRows runs a statement and reports whether it affected exactly rows
// rows, counted as execOne counts them.
func execRows(ctx context.Context, e sqlx.ExecerContext, rows int64, query string, args ...any) (bool, error) {
	res, err := e.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == rows, nil
}

// dbTime scans a time column whichever way the driver hands it over: MySQL
// gives time.Time (parseTime), as pgx does for timestamptz, SQLite columns
// hold Unix milliseconds, and a seed-style table may hold NULL.
type dbTime struct{ time.Time }

// Scan implements sql.Scanner.
func (t *dbTime) Scan(v any) error {
	switch v := v.(type) {
	case time.Time:
		t.Time = v.UTC()
	case int64:
		t.Time = time.UnixMilli(v).UTC()
	case nil:
		t.Time = time.Time{}
	default:
		return fmt.Errorf("scan time: unsupported type %T", v)
	}
	return nil
}

// splitStatements splits a schema into statements for drivers that run one
// at a time. It relies on the file's layout rather than parsing SQL: a
// statement ends with ';' at the end of a line, and lines starting with
// "--" are comments.
func splitStatements(schema string) []string {
	var stmts []string
	var b strings.Builder
	for line := range strings.Lines(schema) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		b.WriteString(line)
		if strings.HasSuffix(t, ";") {
			stmts = append(stmts, strings.TrimSuffix(strings.TrimSpace(b.String()), ";"))
			b.Reset()
		}
	}
	if rest := strings.TrimSpace(b.String()); rest != "" {
		stmts = append(stmts, rest)
	}
	return stmts
}

// applySchema runs every statement of schema.
func applySchema(ctx context.Context, e sqlx.ExecerContext, schema string) error {
	for _, stmt := range splitStatements(schema) {
		if _, err := e.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("apply schema: %w", err)
		}
	}
	return nil
}
