package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func pgError(code string) error { return &pgconn.PgError{Severity: "ERROR", Code: code} }

// TestPostgresSchemaHasEveryTable: the PostgreSQL schema creates the
// tables schema.sql does, which missingTables looks for.
func TestPostgresSchemaHasEveryTable(t *testing.T) {
	stmts := splitStatements(schemaPostgres)
	for _, table := range schemaTables {
		found := false
		for _, s := range stmts {
			found = found || strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS "+table+" (")
		}
		if !found {
			t.Errorf("schema_postgres.sql creates no table %s; its statements: %q", table, stmts)
		}
	}
	for _, c := range addedColumns {
		if !strings.Contains(schemaPostgres, "\n  "+c.name+" ") {
			t.Errorf("schema_postgres.sql's segments has no column %s", c.name)
		}
	}
}

func TestPostgresConfig(t *testing.T) {
	for _, tc := range []struct {
		name, dsn   string
		wantTimeout time.Duration
		wantApp     string
		wantAddr    string
	}{
		{"bare URL gets a connect timeout", "postgres://app@db:5432/ids", defaultDialTimeout, "idalloc", "db:5432"},
		{"the DSN's own settings are kept", "postgres://app:s3cret@db/ids?connect_timeout=1&application_name=ids-eu",
			time.Second, "ids-eu", "db:5432"},
		{"several hosts are named", "postgres://app@a:5432,b:5433/ids?target_session_attrs=read-write&sslmode=disable",
			defaultDialTimeout, "idalloc", "a:5432,b:5433"},
		{"key=value pairs", "host=db port=5433 user=app dbname=ids", defaultDialTimeout, "idalloc", "db:5433"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := postgresConfig(tc.dsn)
			if err != nil {
				t.Fatalf("postgresConfig: %v", err)
			}
			if cfg.ConnectTimeout != tc.wantTimeout || cfg.RuntimeParams["application_name"] != tc.wantApp {
				t.Errorf("connect timeout, application_name = %v, %q; want %v, %q",
					cfg.ConnectTimeout, cfg.RuntimeParams["application_name"], tc.wantTimeout, tc.wantApp)
			}
			if got := postgresAddr(cfg); got != tc.wantAddr {
				t.Errorf("postgresAddr = %q, want %q", got, tc.wantAddr)
			}
		})
	}
}

func TestOpenPostgresErrorsHideThePassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://root:s3cret@127.0.0.1:5432/test?connect_timeout=x", // bad parameter
		"postgres://root:s3cret@127.0.0.1:1/test?sslmode=disable",      // nothing listens on port 1
		"postgres://root:s3cret@127.0.0.1:5432/test?x=%",               // bad escape
		"postgres://root:s3cret@h:port/test",                           // bad port
		"host=127.0.0.1 port=s3cret user=root",                         // a password where the port goes
		"postgres://root:s3cret@127.0.0.1:5432/test?sslmode=bogus",     // bad sslmode
	} {
		_, err := OpenPostgres(t.Context(), dsn, PostgresOptions{})
		if err == nil {
			t.Errorf("OpenPostgres(%q): no error", dsn)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenPostgres error %q contains the password", err)
		}
		if _, err := OpenPostgresReadOnly(t.Context(), dsn); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenPostgresReadOnly(%q) error = %v, want one without the password", dsn, err)
		}
	}
}

// TestPostgresDialectErrors: the SQLSTATEs the dialect maps, on errors as
// pgx wraps them.
func TestPostgresDialectErrors(t *testing.T) {
	for _, tc := range []struct {
		code                string
		duplicate, lostRace bool
	}{
		{pgUniqueViolation, true, true},
		{pgSerializationFailure, false, true},
		{pgDeadlockDetected, false, true},
		{pgLockNotAvailable, false, true},
		{"57014", false, false}, // query_canceled: a fault, not a race
	} {
		err := errors.Join(errors.New("exec"), pgError(tc.code))
		d := postgresDialect
		if d.isDuplicate(err) != tc.duplicate || d.isLostRace(err) != tc.lostRace {
			t.Errorf("%s: duplicate, lost race = %v, %v; want %v, %v", tc.code,
				d.isDuplicate(err), d.isLostRace(err), tc.duplicate, tc.lostRace)
		}
	}
}
