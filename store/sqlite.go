package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/idalloc/idalloc/drivers"
)

// sqliteNow is the current time as Unix milliseconds, which is how the
// SQLite tables store times: integers compare exactly and need no parsing.
// julianday keeps milliseconds internally; ROUND undoes the float's error.
const sqliteNow = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)"

// sqliteSchema is schema.sql's tables in SQLite's dialect (its seeded row is
// sqliteSeed), times as Unix milliseconds.
// STRICT makes SQLite refuse mistyped values as MySQL does. Its default
// BINARY collation already compares keys and tokens byte for byte.
const sqliteSchema = `
CREATE TABLE IF NOT EXISTS segments (
  app_tag     TEXT    NOT NULL PRIMARY KEY,
  max_id      INTEGER NOT NULL DEFAULT 0,
  step        INTEGER NOT NULL,
  description TEXT    NOT NULL DEFAULT '',
  update_time INTEGER NOT NULL DEFAULT 0,
  format      TEXT    NOT NULL DEFAULT 'sequential',
  length      INTEGER NOT NULL DEFAULT 0,
  format_key  BLOB,
  start       INTEGER,
  format_spec TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX IF NOT EXISTS segments_update_time ON segments (update_time);

CREATE TABLE IF NOT EXISTS segment_periods (
  app_tag     TEXT    NOT NULL,
  stamp       INTEGER NOT NULL,
  max_id      INTEGER NOT NULL,
  update_time INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (app_tag, stamp)
) STRICT;

CREATE TABLE IF NOT EXISTS worker_leases (
  cluster           TEXT    NOT NULL,
  worker_id         INTEGER NOT NULL,
  token             TEXT    NOT NULL DEFAULT '',
  holder            TEXT    NOT NULL DEFAULT '',
  expires_at        INTEGER NOT NULL,
  last_timestamp_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (cluster, worker_id)
) STRICT;

CREATE TABLE IF NOT EXISTS worker_layouts (
  cluster     TEXT    NOT NULL PRIMARY KEY,
  epoch_ms    INTEGER NOT NULL,
  worker_bits INTEGER NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS alloc_tokens (
  name        TEXT    NOT NULL PRIMARY KEY,
  token_hash  TEXT    NOT NULL UNIQUE,
  app_tags    TEXT    NOT NULL,
  created_at  INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE IF NOT EXISTS audit_log (
  id      INTEGER PRIMARY KEY,
  at      INTEGER NOT NULL DEFAULT 0,
  caller  TEXT    NOT NULL,
  action  TEXT    NOT NULL,
  subject TEXT    NOT NULL,
  detail  TEXT    NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS idalloc_region (
  id           INTEGER NOT NULL PRIMARY KEY,
  region_count INTEGER NOT NULL,
  region_id    INTEGER NOT NULL,
  recorded_at  INTEGER NOT NULL DEFAULT 0
) STRICT;
`

// sqliteSeed is schema.sql's seeded row. It runs after addSQLiteColumns,
// since it names columns that a file from before them lacks.
const sqliteSeed = `INSERT OR IGNORE INTO segments (app_tag, max_id, step, description, update_time, start)
VALUES ('test_business', 0, 100000, 'test_business', {now}, 1)`

var sqliteDialect = dialect{
	expand:            sqliteExpand(sqliteNow),
	addedColumnsQuery: sqliteAddedColumnsQuery,
	addColumns:        sqliteAddColumns,
	timeArg:           sqliteTime,
	createPeriods:     tableStatement(sqliteSchema, periodsTable),
	tableExists:       `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`,
	// OpenSQLite creates every table, so none is ever missing.
	schemaByHand: "nothing: OpenSQLite creates them",
	isDuplicate:  isSQLiteDuplicate,
	isLostRace:   isSQLiteDuplicate,
	oneWriter:    true,
}

// sqliteExpand is the SQLite placeholder expansion with now as the clock;
// tests substitute a fixed time for sqliteNow.
func sqliteExpand(now string) *strings.Replacer {
	return strings.NewReplacer(
		"{now}", now,
		"{now+ms}", "("+now+" + ?)",
		"{greatest}", "MAX",
		// Every transaction starts IMMEDIATE (see OpenSQLite), which already
		// locks out other writers.
		"{for update}", "",
	)
}

func isSQLiteDuplicate(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) &&
		(se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE)
}

// SQLite is a store in one SQLite file, the embedded default. It is safe for
// concurrent use; several handles or processes may share the file.
type SQLite struct{ db }

// OpenSQLite opens or creates the SQLite database file at path, creating the
// tables and the test_business row when missing, and adding the columns
// added since (formats, start) to a segments table made before them.
// Within a handle, calls run one at a time on a single connection: SQLite
// has one writer anyway, and this keeps a handle from waiting on its own
// lock. Across handles and processes, writers wait for each other up to 5s (busy_timeout) and readers
// never block (WAL). Every write is synced to disk before it returns, so a
// fetched range survives a power cut. Errors: the file cannot be opened or
// created, or is not a database.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("open sqlite: empty path")
	}
	// _txlock=immediate: a transaction takes the write lock when it begins,
	// not at its first write, so two writers never both hold a read snapshot
	// that one of them can no longer upgrade (which fails at once with
	// SQLITE_BUSY instead of waiting). busy_timeout comes first so that
	// switching to WAL waits too.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	x := sqlx.NewDb(sdb, "sqlite")
	x.SetMaxOpenConns(1)
	s := &SQLite{db{x: x, dialect: sqliteDialect}}

	// One transaction, so handles opening a new file at once create it once.
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		had, err := s.tableExists(ctx, tx, "worker_leases")
		if err != nil {
			return err
		}
		if err := applySchema(ctx, tx, s.q(sqliteSchema)); err != nil {
			return err
		}
		if !had {
			// In the creating transaction: the row exists exactly when
			// the table was made empty here.
			if _, err := tx.ExecContext(ctx, s.q(genesisStmt)); err != nil {
				return err
			}
		}
		if err := addSQLiteColumns(ctx, tx); err != nil {
			return err
		}
		return applySchema(ctx, tx, s.q(sqliteSeed))
	})
	if err != nil {
		_ = x.Close() // the open error is the one to report
		if se, ok := errors.AsType[*sqlite.Error](err); ok && se.Code()&0xff == sqlite3.SQLITE_CANTOPEN {
			return nil, fmt.Errorf("open sqlite %s: %w (the dsn is the file's path: its directory must exist, "+
				"and idalloc must be allowed to write there)", path, err)
		}
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.complete.Store(true)
	return s, nil
}

// sqliteDriver is its entry of Drivers.
func sqliteDriver() Driver {
	return Driver{
		Name:     drivers.SQLite,
		Form:     "a file's path, such as idalloc.db",
		Embedded: true,
		Open: func(ctx context.Context, dsn string, _ Options) (Store, error) {
			s, err := OpenSQLite(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		OpenReadOnly: OpenSQLiteReadOnly,
		openTinyid: func(ctx context.Context, dsn string) (*ReadOnly, string, error) {
			r, err := openSQLiteFile(ctx, dsn)
			return r, "sqlite " + dsn, err
		},
	}
}
