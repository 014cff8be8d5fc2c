package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/drivers"
)

// schemaMySQL is the repository's schema.sql. The file lives here, since an
// embed pattern reaches neither outside the package nor through a symlink;
// the one at the repository's root, where users and deploy/ look for it,
// is a symlink to this one, so there is one schema and no copy to keep
// equal.
//
//go:embed schema.sql
var schemaMySQL string

// MySQL error numbers (mysqld_error.h).
const (
	erAccessDenied    = 1045
	erDBAccessDenied  = 1044 // the user may not use the database, which may not exist
	erBadDB           = 1049 // unknown database
	erDupEntry        = 1062
	erLockWaitTimeout = 1205
	erDeadlock        = 1213 // also Galera's certification failure
)

// Defaults for a DSN that sets no timeouts: without them a frozen server
// makes calls hang forever instead of failing.
const (
	defaultDialTimeout  = 3 * time.Second
	defaultReadTimeout  = 5 * time.Second
	defaultWriteTimeout = 5 * time.Second
)

// Pool limits. Connections are recycled well before the 5 minutes after
// which proxies and load balancers commonly drop idle TCP connections.
const (
	mysqlMaxOpenConns    = 16
	mysqlMaxIdleConns    = 4
	mysqlConnMaxLifetime = 3 * time.Minute
)

var mysqlDialect = dialect{
	expand:            mysqlExpand("NOW(3)"),
	addedColumnsQuery: mysqlAddedColumnsQuery,
	addColumns:        mysqlAddColumns,
	timeArg:           utcTime,
	createPeriods:     tableStatement(schemaMySQL, periodsTable),
	tableExists:       `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`,
	schemaByHand:      "schema.sql (mysql DATABASE < schema.sql)",
	isDuplicate:       func(err error) bool { return mysqlErrorIs(err, erDupEntry) },
	isLostRace: func(err error) bool {
		return mysqlErrorIs(err, erDupEntry) || mysqlErrorIs(err, erDeadlock) ||
			mysqlErrorIs(err, erLockWaitTimeout)
	},
}

// mysqlExpand is the MySQL placeholder expansion with now as the clock;
// tests substitute a fixed time for NOW(3).
func mysqlExpand(now string) *strings.Replacer {
	return strings.NewReplacer(
		"{now}", now,
		"{now+ms}", "("+now+" + INTERVAL (? * 1000) MICROSECOND)",
		"{greatest}", "GREATEST",
		"{for update}", "FOR UPDATE",
	)
}

func mysqlErrorIs(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}

// MySQLOptions tunes OpenMySQL.
type MySQLOptions struct {
	// InitSchema applies schema.sql (creating missing tables and the
	// test_business row), turns any TIMESTAMP column of idalloc's tables
	// into DATETIME(3), and adds the columns added since the seed (format,
	// length, format_key, start) and the index on update_time to a
	// segments table made before them, before OpenMySQL returns. Without it the tables must exist with
	// DATETIME columns: a table with a TIMESTAMP column (from an older
	// schema.sql) is refused with ErrOutdatedSchema, naming the ALTER
	// TABLE that fixes it. A segments table without the added columns is
	// used as it is, every row sequential with an unknown start (Tag.Start
	// 0); creating a fixed_length or scrambled tag on it fails with
	// segment.ErrFormatUnsupported, naming the ALTER TABLE that adds them.
	// A table made by another ID service (Leaf's leaf_alloc) is not used:
	// idalloc migrate carries its rows over.
	InitSchema bool
	// Report, if set, is told each change InitSchema makes, in words
	// ("created table segments"), so that a start can log what it did.
	// Nothing is reported when the schema was already complete.
	Report func(change string)
}

// ErrAccessDenied is OpenMySQL's and OpenPostgres's error when the server
// refuses the DSN's user and password (MySQL error 1045, PostgreSQL's
// SQLSTATE 28P01 or 28000); the wrapping error names the user and the
// server, never the password.
var ErrAccessDenied = errors.New("credentials refused")

// MySQL is a store on MySQL, MariaDB, TiDB or Vitess. It is safe for
// concurrent use and holds a pool of at most 16 connections.
type MySQL struct{ db }

// OpenMySQL connects to the database named by dsn (go-sql-driver/mysql
// format, e.g. "user:pass@tcp(host:3306)/idalloc") and checks that it
// answers. Whatever the DSN says, it reads times as UTC (parseTime, loc=UTC,
// session time_zone '+00:00') and counts matched rather than changed rows
// (clientFoundRows), which the compare-and-set statements rely on, and
// interpolates arguments client-side (interpolateParams); it adds
// dial/read/write timeouts of 3s/5s/5s where the DSN sets none. Errors: an
// invalid DSN, an unreachable server, ErrAccessDenied, a failed schema, or,
// without MySQLOptions.InitSchema, ErrMissingTables (no segments table) or
// ErrOutdatedSchema; none of them contains the password.
func OpenMySQL(ctx context.Context, dsn string, opts MySQLOptions) (*MySQL, error) {
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, err
	}
	x, err := mysqlPool(cfg, false)
	if err != nil {
		return nil, err
	}
	m := &MySQL{db{x: x, dialect: mysqlDialect}}
	report := opts.Report
	if report == nil {
		report = func(string) {}
	}

	err = m.Ping(ctx)
	switch {
	case err == nil && opts.InitSchema:
		// The tables missing now are the ones the schema creates: reported,
		// and worker_leases among them gets the genesis row.
		var missing []string
		missing, err = m.missingTables(ctx, x)
		// Columns first: schema.sql's seeded row names them all.
		if err == nil {
			err = m.upgradeColumns(ctx, x, report)
		}
		if err == nil {
			err = applySchema(ctx, x, schemaMySQL)
		}
		for _, t := range missing {
			if err == nil {
				report("created table " + t)
			}
		}
		if err == nil {
			err = m.upgradeUpdateTimeIndex(ctx, report)
		}
		if err == nil && slices.Contains(missing, "worker_leases") {
			// After the CREATE, not with it (MySQL commits DDL on its
			// own): a crash between leaves no genesis row, which only
			// costs each worker ID's first grant a wait.
			_, err = x.ExecContext(ctx, m.q(genesisStmt))
		}
		if err == nil {
			err = m.upgradeDatetime(ctx, report)
		}
	case err == nil:
		err = m.checkTables(ctx)
		if err == nil {
			err = m.checkDatetime(ctx)
		}
	}
	if err == nil {
		_, err = m.missingColumns(ctx)
	}
	if err != nil {
		_ = x.Close() // the open error is the one to report
		switch {
		case mysqlErrorIs(err, erAccessDenied):
			err = fmt.Errorf("%w for %s@%s: %w", ErrAccessDenied, cfg.User, cfg.Addr, err)
		case mysqlErrorIs(err, erDBAccessDenied):
			// MySQL answers 1044, not 1049, to a user without rights on a
			// database that does not exist: either fix is the operator's.
			err = fmt.Errorf("%w: %s may not use database %s, which may not exist either: grant it, or create it: %w",
				ErrAccessDenied, cfg.User, cfg.DBName, err)
		case mysqlErrorIs(err, erBadDB):
			err = unknownDatabase("`" + strings.ReplaceAll(cfg.DBName, "`", "``") + "`")
		}
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return m, nil
}

// mysqlPool makes the connection pool for cfg. With readOnly every
// connection runs SET SESSION TRANSACTION READ ONLY before its first use,
// so the server itself refuses any write through it (error 1792).
func mysqlPool(cfg *mysql.Config, readOnly bool) (*sqlx.DB, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	if readOnly {
		conn = readOnlyConnector{conn}
	}
	x := sqlx.NewDb(sql.OpenDB(conn), "mysql")
	x.SetMaxOpenConns(mysqlMaxOpenConns)
	x.SetMaxIdleConns(mysqlMaxIdleConns)
	x.SetConnMaxLifetime(mysqlConnMaxLifetime)
	return x, nil
}

// readOnlyConnector makes each new connection's session read-only. The
// statement is the same on MySQL and MariaDB, unlike the variable behind it
// (transaction_read_only, tx_read_only), so it cannot go in the DSN.
type readOnlyConnector struct{ driver.Connector }

// Connect implements driver.Connector.
func (c readOnlyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("mysql connection %T cannot execute statements", conn)
	}
	if _, err := ex.ExecContext(ctx, "SET SESSION TRANSACTION READ ONLY", nil); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("set session read-only: %w", err)
	}
	return conn, nil
}

// mysqlConfig parses dsn and forces the settings the store relies on.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		// The driver's parse errors never quote the DSN, so no password leaks.
		return nil, dsnError("mysql", err.Error())
	}
	if cfg.DBName == "" {
		return nil, dsnError("mysql", "it names no database")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	// Arguments interpolated client-side: one round trip per statement
	// instead of prepare, execute and close. Defence in depth, not the
	// correctness argument: with a statement prepared in the middle of a
	// transaction, Galera was seen to lose the abort of that transaction,
	// and the statements after it ran in autocommit.
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// DATETIME holds no zone: NOW(3) and the values read back must both be UTC.
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultDialTimeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = defaultReadTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	return cfg, nil
}

// mysqlDriver is its entry of Drivers.
func mysqlDriver() Driver {
	return Driver{
		Name: drivers.MySQL,
		Form: "user:pass@tcp(host:3306)/dbname",
		Open: func(ctx context.Context, dsn string, opts Options) (Store, error) {
			m, err := OpenMySQL(ctx, dsn, MySQLOptions(opts))
			if err != nil {
				return nil, err // a nil Store, never a nil *MySQL in one
			}
			return m, nil
		},
		OpenReadOnly: OpenMySQLReadOnly,
		openTinyid: func(ctx context.Context, dsn string) (*ReadOnly, string, error) {
			r, addr, err := openMySQLReadOnly(ctx, dsn, "")
			return r, "mysql " + addr, err
		},
		hasForm: func(lower string) bool { return strings.Contains(lower, "@tcp(") || strings.Contains(lower, "@unix(") },
	}
}
