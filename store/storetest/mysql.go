package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DSNEnv names the environment variable holding the DSN of a MySQL server
// for tests.
const DSNEnv = "IDALLOC_TEST_MYSQL_DSN"

// server is the MySQL server this test process uses, found once: a
// container per test would take minutes. A container started here lives as
// long as the process; testcontainers' reaper removes it afterwards.
var server struct {
	once sync.Once
	dsn  string // with rights to create databases
	skip string
	err  error
}

// MySQLDSN returns the DSN of a fresh, empty, private database
// (idalloc_test_<random>) on the test MySQL server, dropped at tb's cleanup.
// It skips tb when there is no server (see the package comment) and fails it
// when the server named cannot be used.
func MySQLDSN(tb testing.TB) string {
	tb.Helper()
	server.once.Do(findServer)
	switch {
	case server.skip != "":
		tb.Skip(server.skip)
	case server.err != nil:
		tb.Fatalf("mysql test server: %v", server.err)
	}
	cfg, err := mysql.ParseDSN(server.dsn)
	if err != nil {
		tb.Fatalf("parse %s: %v", DSNEnv, err)
	}
	// Made of letters and digits here, so safe to splice into statements.
	name := "idalloc_test_" + strings.ToLower(rand.Text()[:16])
	if err := admin(cfg, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := admin(cfg, "DROP DATABASE IF EXISTS "+name); err != nil {
			tb.Error(err)
		}
	})
	cfg = cfg.Clone()
	cfg.DBName = name
	return cfg.FormatDSN()
}

// EmptyMySQL returns a private MySQL database with no tables (see
// MySQLDSN), its parsed DSN, and the same DSN with a password the server
// refuses: for the tests of what a start or a tool says when the dsn
// names the wrong database or the wrong password.
func EmptyMySQL(tb testing.TB) (dsn string, cfg, wrong *mysql.Config) {
	tb.Helper()
	dsn = MySQLDSN(tb)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	wrong = cfg.Clone()
	wrong.Passwd = "n0t-the-pa55word"
	return dsn, cfg, wrong
}

// admin runs one statement on the server with a short-lived connection.
func admin(cfg *mysql.Config, stmt string) error {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("mysql test server: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

func findServer() {
	if dsn := os.Getenv(DSNEnv); dsn != "" {
		server.dsn = dsn
		return
	}
	server.dsn, server.skip, server.err = mysqlInDocker()
}
