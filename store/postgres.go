package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/drivers"
)

// PostgreSQL is reached through pgx's database/sql driver (pgx/stdlib), not
// pgx's own interface: the store's statements are written once for every
// engine against sqlx (db.q rewrites their ? into $n), so PostgreSQL is one
// dialect value and an opener here rather than a second copy of every
// operation.

// schemaPostgres is the repository's schema_postgres.sql, kept here to be
// embedded; the root's is a symlink to it, as schema.sql is (mysql.go).
//
//go:embed schema_postgres.sql
var schemaPostgres string

// PostgreSQL error codes (SQLSTATE, Appendix A of its manual).
const (
	pgUniqueViolation      = "23505"
	pgSerializationFailure = "40001" // a transaction isolation above READ COMMITTED lost
	pgDeadlockDetected     = "40P01"
	pgLockNotAvailable     = "55P03" // lock_timeout, as MySQL's 1205
	pgInvalidPassword      = "28P01"
	pgInvalidAuthorization = "28000" // no pg_hba.conf entry, or a role that may not log in
	pgInvalidCatalogName   = "3D000" // no database of that name
)

// postgresNow is the database's clock. clock_timestamp(), not now(): now()
// is the start of the transaction, which for a statement that waited on a
// row lock is the time before the wait. A renew judged by that time could
// revive a lease that expired while it waited, after another session (a
// grant, idalloc migrate's check that the source is not in use) had read
// it as expired; judged by the clock when the row is written, a lease once
// expired stays expired unless its own holder releases it.
const postgresNow = "clock_timestamp()"

var postgresDialect = dialect{
	expand:            postgresExpand(postgresNow),
	addedColumnsQuery: postgresAddedColumnsQuery,
	addColumns:        postgresAddColumns,
	timeArg:           utcTime,
	createPeriods:     tableStatement(schemaPostgres, periodsTable),
	// current_schema(): where the schema's CREATE TABLE IF NOT EXISTS puts
	// a table and where an unqualified name finds it first.
	tableExists:  `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?`,
	schemaByHand: "schema_postgres.sql (psql -d DATABASE -f schema_postgres.sql)",
	isDuplicate:  func(err error) bool { return pgErrorIs(err, pgUniqueViolation) },
	// Each deciding statement commits on its own. At the default READ
	// COMMITTED a compare-and-set that waited on a row lock re-checks its
	// WHERE on the row as the winner left it and matches nothing; on a
	// database whose default isolation is REPEATABLE READ or SERIALIZABLE
	// the same loss is a serialization failure. Either way the caller reads
	// again at once.
	isLostRace: func(err error) bool {
		return pgErrorIs(err, pgUniqueViolation) || pgErrorIs(err, pgSerializationFailure) ||
			pgErrorIs(err, pgDeadlockDetected) || pgErrorIs(err, pgLockNotAvailable)
	},
}

// postgresExpand is the PostgreSQL placeholder expansion with now as the
// clock; tests substitute a fixed time for clock_timestamp().
func postgresExpand(now string) *strings.Replacer {
	return strings.NewReplacer(
		"{now}", now,
		// The cast types the argument, which PostgreSQL could not infer
		// from a product with an interval.
		"{now+ms}", "("+now+" + CAST(? AS BIGINT) * INTERVAL '1 millisecond')",
		"{greatest}", "GREATEST",
		"{for update}", "FOR UPDATE",
	)
}

func pgErrorIs(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// Pool limits, as MySQL's (see mysqlMaxOpenConns).
const (
	postgresMaxOpenConns    = 16
	postgresMaxIdleConns    = 4
	postgresConnMaxLifetime = 3 * time.Minute
)

// PostgresOptions tunes OpenPostgres.
type PostgresOptions struct {
	// InitSchema applies schema_postgres.sql (creating missing tables and
	// the test_business row) and adds the columns added since the seed
	// (format, length, format_key, start) and the index on update_time to
	// a segments table made before them, in one transaction, before
	// OpenPostgres returns. Without it the
	// segments table must exist; one without the added columns is used as
	// it is, as on MySQL (see MySQLOptions.InitSchema).
	InitSchema bool
	// Report, if set, is told each change InitSchema made, in words
	// ("created table segments"), once it is committed. Nothing is
	// reported when the schema was already complete.
	Report func(change string)
}

// Postgres is a store on PostgreSQL 13 or later. It is safe for concurrent
// use and holds a pool of at most 16 connections.
type Postgres struct{ db }

// OpenPostgres connects to the database named by dsn, as pgx takes it (a
// URL, "postgres://user:pass@host:5432/idalloc?sslmode=disable", or
// key=value pairs; several hosts with target_session_attrs=read-write
// connect to whichever is the primary), and checks that it answers. It
// adds a 3s connect timeout where the DSN sets none. Tables are looked for
// in the first schema of the search_path. Statements are prepared once per
// connection (pgx's statement cache); behind a PgBouncer in transaction
// mode older than 1.21, add default_query_exec_mode=exec to the DSN.
// Errors: an invalid DSN, an unreachable server, ErrAccessDenied (SQLSTATE
// 28P01 or 28000), a failed schema, or, without PostgresOptions.InitSchema,
// ErrMissingTables (no segments table); none of them contains the password.
func OpenPostgres(ctx context.Context, dsn string, opts PostgresOptions) (*Postgres, error) {
	cfg, err := postgresConfig(dsn)
	if err != nil {
		return nil, err
	}
	x := postgresPool(cfg, false)
	p := &Postgres{db{x: x, dialect: postgresDialect}}
	report := opts.Report
	if report == nil {
		report = func(string) {}
	}
	err = p.Ping(ctx)
	switch {
	case err == nil && opts.InitSchema:
		var changes []string
		changes, err = p.initSchema(ctx)
		for _, c := range changes {
			if err == nil {
				report(c)
			}
		}
	case err == nil:
		err = p.checkTables(ctx)
	}
	if err == nil {
		_, err = p.missingColumns(ctx)
	}
	if err != nil {
		_ = x.Close() // the open error is the one to report
		switch {
		case pgErrorIs(err, pgInvalidPassword) || pgErrorIs(err, pgInvalidAuthorization):
			err = fmt.Errorf("%w for %s@%s: %w", ErrAccessDenied, cfg.User, postgresAddr(cfg), err)
		case pgErrorIs(err, pgInvalidCatalogName):
			err = unknownDatabase(`"` + strings.ReplaceAll(cfg.Database, `"`, `""`) + `"`)
		}
		return nil, fmt.Errorf("open postgres %s/%s: %w", postgresAddr(cfg), cfg.Database, err)
	}
	return p, nil
}

// postgresIndexQuery reports whether segments has the index its one
// argument names, in the schema the tables are looked for in.
const postgresIndexQuery = `SELECT EXISTS (SELECT 1 FROM pg_indexes
	WHERE schemaname = current_schema() AND tablename = 'segments' AND indexname = ?)`

// initSchemaLock is the key of the advisory lock that -init-schema holds
// while it looks at and changes the schema: two instances starting at once
// on an empty database would otherwise race to create the same table
// (PostgreSQL then refuses the loser with a duplicate key in its catalog).
const initSchemaLock = 0x1dA110C

// initSchema applies the schema in one transaction, which PostgreSQL's
// transactional DDL makes all or nothing: the genesis row exists exactly
// when this transaction created worker_leases empty, and the changes it
// returns (for Report) are the ones committed.
func (p *Postgres) initSchema(ctx context.Context) (changes []string, err error) {
	err = p.inTx(ctx, func(tx *sqlx.Tx) error {
		changes = nil
		// READ COMMITTED whatever the database's default: each statement
		// after the lock must see what an instance that held it before
		// committed, not a snapshot taken before the wait.
		if _, err := tx.ExecContext(ctx, `SET TRANSACTION ISOLATION LEVEL READ COMMITTED`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, p.q(`SELECT pg_advisory_xact_lock(?)`), int64(initSchemaLock)); err != nil {
			return err
		}
		missing, err := p.missingTables(ctx, tx)
		if err != nil {
			return err
		}
		// Columns first: the seeded row names them all.
		if err := p.upgradeColumns(ctx, tx, func(c string) { changes = append(changes, c) }); err != nil {
			return err
		}
		// The schema's CREATE INDEX IF NOT EXISTS adds the index on
		// update_time to a table made before it: reported as a change.
		indexed := true
		if !slices.Contains(missing, "segments") {
			if err := sqlx.GetContext(ctx, tx, &indexed, p.q(postgresIndexQuery), updateTimeIndex); err != nil {
				return err
			}
		}
		if err := applySchema(ctx, tx, schemaPostgres); err != nil {
			return err
		}
		for _, t := range missing {
			changes = append(changes, "created table "+t)
		}
		if !indexed {
			changes = append(changes, "added index "+updateTimeIndex+" (update_time) to segments")
		}
		if slices.Contains(missing, "worker_leases") {
			if _, err := tx.ExecContext(ctx, p.q(genesisStmt)); err != nil {
				return err
			}
		}
		return nil
	})
	return changes, err
}

// postgresConfig parses dsn and adds what the store relies on.
func postgresConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, dsnError("postgres", parseErrorWithoutDSN(err).Error())
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultDialTimeout
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "idalloc"
	}
	return cfg, nil
}

// parseErrorWithoutDSN is pgx's refusal of a DSN without the DSN: pgx
// masks the password it recognises, but says that it cannot recognise
// every one in a malformed string, and the error it wraps may quote a part
// of it (a port that was a password). What is left is pgx's own words
// ("invalid port").
func parseErrorWithoutDSN(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return errors.New("invalid DSN")
	}
	msg := pe.Error()
	if inner := pe.Unwrap(); inner != nil {
		msg = strings.TrimSuffix(msg, " ("+inner.Error()+")")
	}
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		msg = msg[i+len("`: "):]
	}
	return errors.New(msg)
}

// postgresPool makes the connection pool for cfg. With readOnly every
// session starts with default_transaction_read_only on, so the server
// itself refuses any write through it (SQLSTATE 25006).
func postgresPool(cfg *pgx.ConnConfig, readOnly bool) *sqlx.DB {
	if readOnly {
		cfg = cfg.Copy()
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	x := sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	x.SetMaxOpenConns(postgresMaxOpenConns)
	x.SetMaxIdleConns(postgresMaxIdleConns)
	x.SetConnMaxLifetime(postgresConnMaxLifetime)
	return x
}

// postgresAddr names the server (or servers) of cfg for errors: host:port,
// the fallback hosts after it.
func postgresAddr(cfg *pgx.ConnConfig) string {
	addrs := []string{cfg.Host + ":" + strconv.Itoa(int(cfg.Port))}
	for _, f := range cfg.Fallbacks {
		a := f.Host + ":" + strconv.Itoa(int(f.Port))
		if !slices.Contains(addrs, a) { // one per TLS mode tried
			addrs = append(addrs, a)
		}
	}
	return strings.Join(addrs, ",")
}

// postgresDriver is its entry of Drivers.
func postgresDriver() Driver {
	return Driver{
		Name: drivers.Postgres,
		Form: "postgres://user:pass@host:5432/dbname?sslmode=disable, or host=... user=... dbname=...",
		Open: func(ctx context.Context, dsn string, opts Options) (Store, error) {
			p, err := OpenPostgres(ctx, dsn, PostgresOptions(opts))
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		OpenReadOnly: OpenPostgresReadOnly,
		openTinyid: func(ctx context.Context, dsn string) (*ReadOnly, string, error) {
			r, err := openPostgresReadOnly(ctx, dsn, "tiny_id_info") // its errors name the database
			return r, "", err
		},
		hasForm: func(lower string) bool {
			return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
		},
	}
}
