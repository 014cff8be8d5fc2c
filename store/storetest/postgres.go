package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for admin
)

// PostgresDSNEnv names the environment variable holding the DSN of a
// PostgreSQL server for tests, as pgx takes it.
const PostgresDSNEnv = "IDALLOC_TEST_POSTGRES_DSN"

const skipNoPostgres = PostgresDSNEnv + " not set: skipping PostgreSQL tests"

// PostgresDSN returns the DSN of a fresh, empty, private schema
// (idalloc_test_<random>) in the database of the test PostgreSQL server,
// dropped with its tables at tb's cleanup. The DSN makes it the session's
// search_path, so idalloc creates and finds its tables there, as it would
// in a database of its own. A schema, not a database as on MySQL: creating
// and dropping a PostgreSQL database costs a checkpoint or a copy of
// template1 each (over two seconds together on a busy machine), a schema
// milliseconds, and the suites make hundreds. It skips tb when the
// variable is not set and fails it when the server named cannot be used.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(PostgresDSNEnv)
	if dsn == "" {
		tb.Skip(skipNoPostgres)
	}
	// Made of letters and digits here, so safe to splice into statements.
	name := "idalloc_test_" + strings.ToLower(rand.Text()[:16])
	if err := postgresAdmin(dsn, "CREATE SCHEMA "+name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := postgresAdmin(dsn, "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
			tb.Error(err)
		}
	})
	out, err := withSearchPath(dsn, name)
	if err != nil {
		tb.Fatalf("%s: %v", PostgresDSNEnv, err)
	}
	return out
}

// withSearchPath is dsn, a URL or key=value pairs, with search_path set
// to schema (pgx sends a parameter it does not know as a session setting).
func withSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse dsn: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " search_path=" + schema, nil
}

// postgresAdmin runs one statement on the server with a short-lived
// connection.
func postgresAdmin(dsn, stmt string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return fmt.Errorf("postgres test server: %w", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("postgres test server: %s: %w", stmt, err)
	}
	return nil
}
