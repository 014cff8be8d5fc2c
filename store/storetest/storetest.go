// Package storetest is the conformance suite of package store, and the way
// any package's tests get a real store for every driver.
//
// Run(t, driver) proves the contract of segment.Store (and of
// segment.PeriodStore, the counters of dated tags, of segment.RegionStore,
// the region a database serves, and of access.Store, the tokens and the
// audit log) against one driver,
// and LeaseTarget(driver) is the target on which workerlease's own suite
// (leasetest) and snowflake/leased's of layouts (internal/layouttest)
// run; package store runs all three for every driver of Drivers.
//
// Other packages' tests get fresh databases from Drivers:
//
//	for _, d := range storetest.Drivers() {
//		t.Run(d.Name, func(t *testing.T) {
//			st := d.Open(t) // one handle on a fresh database, closed at cleanup
//			...
//		})
//	}
//
// For several instances sharing one database, call d.NewDB(t) once and
// DB.Open(t) per instance; DB.DSN is what the idalloc config's dsn takes.
//
// SQLite always runs, in a file under t.TempDir(). MySQL runs against the
// server named by IDALLOC_TEST_MYSQL_DSN (e.g. root@tcp(127.0.0.1:3306)/test;
// the user must be allowed to create databases), else (built with -tags
// testcontainers) against a MySQL container when a Docker engine answers,
// else the test is skipped with a one-line reason. Each MySQL database is a private one
// (idalloc_test_<random>), dropped at cleanup, so tests and packages running
// in parallel never share rows. PostgreSQL runs against the server named by
// IDALLOC_TEST_POSTGRES_DSN (e.g.
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), each
// database a private schema (idalloc_test_<random>) of the DSN's database,
// dropped at cleanup (see PostgresDSN); without the variable the test is
// skipped with a one-line reason.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

// Driver names a store driver and makes fresh databases for it.
type Driver struct {
	// Name is the idalloc config's driver key: "sqlite", "mysql" or
	// "postgres".
	Name string
	// NewDB creates a fresh database with the schema and the seeded
	// test_business row, removed at tb's cleanup. It skips tb when the
	// driver cannot run here.
	NewDB func(tb testing.TB) DB
	// sqlName is its database/sql driver's name, for connections of a
	// test's own outside the store.
	sqlName string
	// utcConn returns the dsn and the statement for a connection that
	// reads and writes times as the store does (exec).
	utcConn func(tb testing.TB, dsn, stmt string) (connDSN, boundStmt string)
	// millis says its time columns hold Unix milliseconds (timeValue).
	millis bool
}

// driver returns db's entry of Drivers.
func (db DB) driver(tb testing.TB) Driver {
	tb.Helper()
	for _, d := range Drivers() {
		if d.Name == db.Driver {
			return d
		}
	}
	tb.Fatalf("unknown driver %q", db.Driver)
	return Driver{}
}

// Open returns one handle on a fresh database.
func (d Driver) Open(tb testing.TB) store.Store {
	tb.Helper()
	return d.NewDB(tb).Open(tb)
}

// DB is one fresh database.
type DB struct {
	Driver string // as Driver.Name
	DSN    string // as the idalloc config's dsn takes it
}

// Open returns a new handle on db with connections of its own, closed at
// tb's cleanup. It fails tb when the database cannot be opened.
func (db DB) Open(tb testing.TB) store.Store {
	tb.Helper()
	st, err := db.open(false)
	if err != nil {
		tb.Fatalf("open %s store: %v", db.Driver, err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close %s store: %v", db.Driver, err)
		}
	})
	return st
}

// OpenReadOnly opens db as idalloc migrate opens its source (the
// driver's read-only opener), closed at tb's cleanup. It fails tb when
// the database cannot be opened.
func (db DB) OpenReadOnly(tb testing.TB) *store.ReadOnly {
	tb.Helper()
	d, ok := store.DriverNamed(db.Driver)
	if !ok {
		tb.Fatalf("no driver %q in store.Drivers", db.Driver)
	}
	r, err := d.OpenReadOnly(context.Background(), db.DSN)
	if err != nil {
		tb.Fatalf("open %s read-only: %v", db.Driver, err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

// Exec runs statements on db through a connection of its own, as an
// operator's client would: for faults the store itself never makes.
func (db DB) Exec(tb testing.TB, stmts ...string) {
	tb.Helper()
	x, err := sql.Open(db.driver(tb).sqlName, db.DSN)
	if err != nil {
		tb.Fatalf("open %s: %v", db.Driver, err)
	}
	defer x.Close()
	for _, stmt := range stmts {
		if _, err := x.ExecContext(context.Background(), stmt); err != nil {
			tb.Fatalf("%s: %v", stmt, err)
		}
	}
}

// create applies the schema to a new database by opening one handle.
func (db DB) create(tb testing.TB) DB {
	tb.Helper()
	st, err := db.open(true)
	if err != nil {
		tb.Fatalf("create %s database: %v", db.Driver, err)
	}
	if err := st.Close(); err != nil {
		tb.Fatalf("close %s store: %v", db.Driver, err)
	}
	return db
}

// open opens db through store.Open, the drivers' one switch. SQLite
// always creates what is missing; initSchema prepares a MySQL database.
func (db DB) open(initSchema bool) (store.Store, error) {
	return store.Open(context.Background(), db.Driver, db.DSN, store.Options{InitSchema: initSchema})
}

// Drivers returns every driver: SQLite, MySQL and PostgreSQL, each engine
// of store.Drivers registered for tests (store's tests hold the two
// lists equal). Package store runs both conformance suites on each, and
// every other package's tests that need a real store loop over it.
func Drivers() []Driver { return []Driver{SQLite(), MySQL(), Postgres()} }

// SQLite is the embedded driver; its databases are files in tb.TempDir().
func SQLite() Driver {
	return Driver{Name: "sqlite", sqlName: "sqlite", millis: true,
		NewDB: func(tb testing.TB) DB {
			tb.Helper()
			return DB{Driver: "sqlite", DSN: filepath.Join(tb.TempDir(), "idalloc.db")}.create(tb)
		},
		utcConn: func(_ testing.TB, dsn, stmt string) (string, string) {
			return "file:" + (&url.URL{Path: dsn}).EscapedPath() + "?_pragma=busy_timeout(5000)", stmt
		},
	}
}

// MySQL is the MySQL driver; its databases are private ones made by
// MySQLDSN, with schema.sql applied.
func MySQL() Driver {
	return Driver{Name: "mysql", sqlName: "mysql",
		NewDB: func(tb testing.TB) DB {
			tb.Helper()
			return DB{Driver: "mysql", DSN: MySQLDSN(tb)}.create(tb)
		},
		// A session whose time_zone is UTC, as the store's are.
		utcConn: func(tb testing.TB, dsn, stmt string) (string, string) {
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				tb.Fatalf("parse dsn: %v", err)
			}
			cfg.Loc = time.UTC
			cfg.Params = map[string]string{"time_zone": "'+00:00'"}
			return cfg.FormatDSN(), stmt
		},
	}
}

// Postgres is the PostgreSQL driver; its databases are private schemas
// made by PostgresDSN, with schema_postgres.sql applied.
func Postgres() Driver {
	return Driver{Name: "postgres", sqlName: "pgx",
		NewDB: func(tb testing.TB) DB {
			tb.Helper()
			return DB{Driver: "postgres", DSN: PostgresDSN(tb)}.create(tb)
		},
		utcConn: func(_ testing.TB, dsn, stmt string) (string, string) {
			return dsn, sqlx.Rebind(sqlx.DOLLAR, stmt)
		},
	}
}

// Run is the conformance suite: every case runs in parallel on a fresh
// database of d. It skips t when d cannot run here.
func Run(t *testing.T, d Driver) {
	// One probe database up front skips the whole suite in one line rather
	// than each case on its own.
	d.NewDB(t)
	cases := slices.Concat(segmentCases(), tagCases(), formatCases(), timeCases(), datedCases(), updateCases(), accessCases(), regionCases(), regionIssuedCases())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, d.NewDB(t))
		})
	}
}

// LeaseTarget is d as a target of workerlease's conformance suite
// (leasetest.Run): each namespace a fresh database, each handle its own
// connection pool. Its unreachable store is a handle already closed, whose
// calls fail as a dead connection pool's do.
func LeaseTarget(d Driver) leasetest.Target {
	return leasetest.Target{
		Fresh: func(tb testing.TB) leasetest.Namespace {
			db := d.NewDB(tb)
			return leasetest.Namespace{
				Open: func(tb testing.TB) workerlease.Store { return db.Open(tb) },
				// An operator's DELETE, or a restore of a dump without
				// them: the store cannot tell either from a new cluster.
				Forget: func(tb testing.TB) { db.Exec(tb, "DELETE FROM worker_leases", "DELETE FROM worker_layouts") },
				// The cluster names and IDs are the suite's own: no quoting needed.
				ForgetCluster: func(tb testing.TB, cluster string) {
					db.Exec(tb, fmt.Sprintf("DELETE FROM worker_leases WHERE cluster = '%s'", cluster),
						fmt.Sprintf("DELETE FROM worker_layouts WHERE cluster = '%s'", cluster))
				},
				ForgetWorker: func(tb testing.TB, cluster string, workerID int64) {
					db.Exec(tb, fmt.Sprintf("DELETE FROM worker_leases WHERE cluster = '%s' AND worker_id = %d", cluster, workerID))
				},
			}
		},
		Genesis: true, // each database is made by the store, empty
		Unreachable: func(tb testing.TB) workerlease.Store {
			st, err := d.NewDB(tb).open(false)
			if err != nil {
				tb.Fatalf("open %s store: %v", d.Name, err)
			}
			if err := st.Close(); err != nil {
				tb.Fatalf("close %s store: %v", d.Name, err)
			}
			return st
		},
		TTL: 400 * time.Millisecond,
	}
}

// testCase is one behaviour the suite proves on a fresh database.
type testCase struct {
	name string
	test func(t *testing.T, db DB)
}
