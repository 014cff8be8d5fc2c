package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/idalloc/idalloc/segment"
)

// ReadOnly is a database opened to be read and never written: the source
// of idalloc migrate. It has no write method, and the database refuses
// writes through it too (SQLite mode=ro, a MySQL session in READ ONLY
// mode, a PostgreSQL session with default_transaction_read_only). It is
// safe for concurrent use.
type ReadOnly struct {
	d db
	// tagsQuery selects the columns of tagRow from the table of tags; ""
	// for idalloc's segments table, read as the store's Tags reads it.
	tagsQuery string
	// tables are the names of the database's tables.
	tables map[string]bool
}

// OpenSQLiteReadOnly opens the idalloc SQLite file at path for reading
// only (mode=ro): it never creates or changes the file, so a file this
// process may not write (another uid's, or mode 0444) can be read. A file
// in WAL mode (as idalloc writes it) is read through its -shm index, which
// SQLite creates next to it when the directory allows; where it cannot and
// no -wal file holds transactions yet to be folded into the database file
// (as after every instance stopped gracefully), the file is read as
// immutable instead. Errors: the file is missing, is not a database, has
// no segments table, or has a non-empty -wal file SQLite cannot read here.
func OpenSQLiteReadOnly(ctx context.Context, path string) (*ReadOnly, error) {
	r, err := openSQLiteFile(ctx, path)
	if err == nil {
		if err = r.require("segments", ""); err != nil {
			_ = r.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s read-only: %w", path, err)
	}
	return r, nil
}

// openSQLiteFile opens the SQLite file at path read-only, as
// OpenSQLiteReadOnly describes, whatever tables it has.
func openSQLiteFile(ctx context.Context, path string) (*ReadOnly, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	// mode=ro would fail on a missing file too, with a vaguer message.
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	r, err := openSQLiteReadOnly(ctx, path, false)
	if err != nil && sqliteCannotRead(err) {
		empty, walErr := walEmpty(path)
		switch {
		case walErr != nil:
			err = errors.Join(err, walErr)
		case empty:
			r, err = openSQLiteReadOnly(ctx, path, true)
		default:
			err = fmt.Errorf("%w: %s-wal holds transactions not yet in the database file, and SQLite cannot "+
				"create %s-shm here to read them: make the directory writable for this user, or run an "+
				"idalloc instance on the file once and stop it gracefully", err, path, path)
		}
	}
	return r, err
}

// openSQLiteReadOnly opens path with mode=ro, or immutable=1, and lists its
// tables, which is when SQLite actually opens the file.
func openSQLiteReadOnly(ctx context.Context, path string, immutable bool) (*ReadOnly, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(5000)"
	if immutable {
		dsn += "&immutable=1"
	}
	x, err := sqlx.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	x.SetMaxOpenConns(1)
	r := &ReadOnly{d: db{x: x, dialect: sqliteDialect}}
	if err := r.listTables(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`); err != nil {
		_ = x.Close()
		return nil, err
	}
	return r, nil
}

// sqliteCannotRead reports SQLite's refusals to open a WAL file read-only
// where it cannot create the -shm index (SQLITE_READONLY_DIRECTORY, or
// SQLITE_CANTOPEN when a -wal file is there).
func sqliteCannotRead(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_READONLY || code == sqlite3.SQLITE_CANTOPEN
}

// walEmpty reports whether path has no -wal file with content: then the
// database file holds every committed transaction, and reading it as
// immutable misses nothing.
func walEmpty(path string) (bool, error) {
	fi, err := os.Stat(path + "-wal")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, err
	}
	return fi.Size() == 0, nil
}

// OpenMySQLReadOnly opens the idalloc database named by dsn (as OpenMySQL
// takes it) for reading only: every session is READ ONLY, no schema is
// applied, and TIMESTAMP columns are read as they are (they only fail
// writes after 2038). Errors: as OpenMySQL's, or no segments table.
func OpenMySQLReadOnly(ctx context.Context, dsn string) (*ReadOnly, error) {
	r, addr, err := openMySQLReadOnly(ctx, dsn, "")
	if err == nil {
		if err = r.require("segments", "leaf_alloc"); err != nil {
			_ = r.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open mysql %s read-only: %w", addr, err)
	}
	return r, nil
}

// openMySQLReadOnly connects with READ ONLY sessions and lists the tables.
// addr names the database for errors, without the password.
func openMySQLReadOnly(ctx context.Context, dsn, tagsQuery string) (r *ReadOnly, addr string, err error) {
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, "", err
	}
	addr = cfg.Addr + "/" + cfg.DBName
	x, err := mysqlPool(cfg, true)
	if err != nil {
		return nil, addr, err
	}
	r = &ReadOnly{d: db{x: x, dialect: mysqlDialect}, tagsQuery: tagsQuery}
	err = r.listTables(ctx, `SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`)
	if err != nil {
		_ = x.Close()
		return nil, addr, err
	}
	return r, addr, nil
}

// OpenPostgresReadOnly opens the idalloc database named by dsn (as
// OpenPostgres takes it) for reading only: every session starts with
// default_transaction_read_only on, so the server refuses writes, and no
// schema is applied. Tables are read from the first schema of the
// search_path. Errors: as OpenPostgres's, or no segments table.
func OpenPostgresReadOnly(ctx context.Context, dsn string) (*ReadOnly, error) {
	return openPostgresReadOnly(ctx, dsn, "segments")
}

// openPostgresReadOnly opens dsn read-only, as OpenPostgresReadOnly
// describes, requiring table.
func openPostgresReadOnly(ctx context.Context, dsn, table string) (*ReadOnly, error) {
	cfg, err := postgresConfig(dsn)
	if err != nil {
		return nil, err
	}
	x := postgresPool(cfg, true)
	r := &ReadOnly{d: db{x: x, dialect: postgresDialect}}
	err = r.listTables(ctx, `SELECT CAST(table_name AS TEXT) FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err == nil {
		err = r.require(table, "")
	}
	if err != nil {
		_ = x.Close()
		if pgErrorIs(err, pgInvalidPassword) || pgErrorIs(err, pgInvalidAuthorization) {
			err = fmt.Errorf("%w for %s@%s: %w", ErrAccessDenied, cfg.User, postgresAddr(cfg), err)
		}
		return nil, fmt.Errorf("open postgres %s/%s read-only: %w", postgresAddr(cfg), cfg.Database, err)
	}
	return r, nil
}

func (r *ReadOnly) listTables(ctx context.Context, query string) error {
	var names []string
	if err := r.d.x.SelectContext(ctx, &names, r.d.q(query)); err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	r.tables = make(map[string]bool, len(names))
	for _, n := range names {
		r.tables[n] = true
	}
	return nil
}

// require fails unless the database has table; other names a table that
// suggests what the database is instead.
func (r *ReadOnly) require(table, other string) error {
	switch {
	case r.tables[table]:
		return nil
	case other == "leaf_alloc" && r.tables[other]:
		return fmt.Errorf("no %s table, but Leaf's leaf_alloc: read it as a Leaf database (OpenLeaf, idalloc migrate -from-driver leaf)", table)
	}
	return fmt.Errorf("no %s table", table)
}

// Tags lists every tag of the source with its max_id, step, description,
// format, length, (scrambled) key and (dated) FormatSpec, as
// segment.Store's Tags does; rows of
// a table without the format columns, and Leaf's, are sequential.
func (r *ReadOnly) Tags(ctx context.Context) ([]segment.Tag, error) {
	if r.tagsQuery != "" {
		return r.d.selectTags(ctx, r.tagsQuery)
	}
	return r.d.Tags(ctx)
}

// LeaseTimestamps lists every worker ID's snowflake history; none where the
// database has no worker_leases table (a seed-style or Leaf database).
func (r *ReadOnly) LeaseTimestamps(ctx context.Context) ([]LeaseTimestamp, error) {
	if !r.tables["worker_leases"] {
		return nil, nil
	}
	return r.d.LeaseTimestamps(ctx)
}

// Layouts lists every recorded cluster layout; none where the database has
// no worker_layouts table.
func (r *ReadOnly) Layouts(ctx context.Context) ([]ClusterLayout, error) {
	if !r.tables["worker_layouts"] {
		return nil, nil
	}
	return r.d.Layouts(ctx)
}

// Periods lists every period counter of dated tags; none where the
// database has no segment_periods table (made before it, or Leaf's).
func (r *ReadOnly) Periods(ctx context.Context) ([]PeriodCounter, error) {
	if !r.tables[periodsTable] {
		return nil, nil
	}
	return r.d.Periods(ctx)
}

// Close closes the connections; calling it again does nothing.
func (r *ReadOnly) Close() error { return r.d.Close() }
