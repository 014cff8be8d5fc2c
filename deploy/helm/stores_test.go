package helmchart_test

// The stores a values case names, for its pod: private MySQL and
// PostgreSQL databases of the test servers (or SQLite when none is set),
// private redis-server and etcd processes for the lease stores.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// storeEnv points the pod's store at this machine: the SQLite file into
// tmp through its volume, MySQL and PostgreSQL at a private database of
// the test servers when they are set, else at SQLite. A pod that does not
// start with -init-schema gets the tables made first, from the
// repository's schema file, as its operator would have made them.
func storeEnv(t *testing.T, r *rendered, cfg idallocConfig, env map[string]string, tmp string, initSchema bool) {
	t.Helper()
	sqlite := func(why string) {
		if why != "" {
			t.Logf("driver %s on SQLite in a temporary directory: %s", cfg.Driver, why)
		}
		env["IDALLOC_DRIVER"] = "sqlite"
		env["IDALLOC_DSN"] = filepath.Join(tmp, "idalloc.db")
	}
	switch cfg.Driver {
	case "sqlite":
		_, rel := sqliteFile(t, r, cfg)
		dir := filepath.Join(tmp, "data")
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		env["IDALLOC_DSN"] = filepath.Join(dir, rel)
	case "mysql":
		if dsn := os.Getenv(mysqlDSNEnv); dsn != "" {
			env["IDALLOC_DSN"] = privateMySQL(t, dsn)
			if !initSchema {
				applySchema(t, "mysql", env["IDALLOC_DSN"], "schema.sql")
			}
			return
		}
		sqlite(mysqlDSNEnv + " is not set")
	case "postgres":
		if dsn := os.Getenv(postgresDSNEnv); dsn != "" {
			env["IDALLOC_DSN"] = privatePostgres(t, dsn)
			if !initSchema {
				applySchema(t, "pgx", env["IDALLOC_DSN"], "schema_postgres.sql")
			}
			return
		}
		sqlite(postgresDSNEnv + " is not set")
	default:
		t.Fatalf("driver %q", cfg.Driver)
	}
}

// leaseEnv points a Redis or etcd lease store at a private server.
func leaseEnv(t *testing.T, cfg idallocConfig, env map[string]string, tmp string) {
	t.Helper()
	switch cfg.Lease.Driver {
	case "redis":
		if bin, err := exec.LookPath("redis-server"); err == nil {
			port := freePort(t)
			startServer(t, "redis-server", port, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--dir", tmp)
			env["IDALLOC_LEASE_DSN"] = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
			return
		}
	case "etcd":
		if bin, err := exec.LookPath("etcd"); err == nil {
			client, peer := freePort(t), freePort(t)
			cu, pu := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
			startServer(t, "etcd", client, bin, "--name", "helmchart", "--data-dir", filepath.Join(tmp, "etcd"),
				"--listen-client-urls", cu, "--advertise-client-urls", cu,
				"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu, "--initial-cluster", "helmchart="+pu)
			env["IDALLOC_LEASE_DSN"] = cu
			return
		}
	default:
		return
	}
	t.Logf("lease driver %s on the main store: no %s installed", cfg.Lease.Driver, cfg.Lease.Driver)
	env["IDALLOC_LEASE_DRIVER"] = "sql"
	delete(env, "IDALLOC_LEASE_DSN")
}

// privateMySQL is dsn with a fresh database of its own, dropped at cleanup.
func privateMySQL(t *testing.T, dsn string) string {
	t.Helper()
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("%s: %v", mysqlDSNEnv, err)
	}
	name := "idalloc_test_helm_" + strings.ToLower(rand.Text()[:12])
	admin(t, "mysql", dsn, "CREATE DATABASE "+name, "DROP DATABASE IF EXISTS "+name)
	c.DBName = name
	return c.FormatDSN()
}

// privatePostgres is dsn with a fresh schema of its own as its search_path,
// dropped at cleanup.
func privatePostgres(t *testing.T, dsn string) string {
	t.Helper()
	name := "idalloc_test_helm_" + strings.ToLower(rand.Text()[:12])
	admin(t, "pgx", dsn, "CREATE SCHEMA "+name, "DROP SCHEMA IF EXISTS "+name+" CASCADE")
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("%s: %v", postgresDSNEnv, err)
		}
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + name
}

// applySchema runs the repository's schema file on dsn.
func applySchema(t *testing.T, driver, dsn, file string) {
	t.Helper()
	if driver == "mysql" { // the file is many statements
		c, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		c.MultiStatements = true
		dsn = c.FormatDSN()
	}
	b, err := os.ReadFile(filepath.Join(repoRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, string(b)); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// admin runs create now and drop at cleanup, each on a short-lived connection.
func admin(t *testing.T, driver, dsn, create, drop string) {
	t.Helper()
	run := func(stmt string) error {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = db.ExecContext(ctx, stmt)
		return err
	}
	if err := run(create); err != nil {
		t.Fatalf("%s: %v", create, err)
	}
	t.Cleanup(func() {
		if err := run(drop); err != nil {
			t.Errorf("%s: %v", drop, err)
		}
	})
}

var ports struct {
	sync.Mutex
	used map[int]bool
}

// freePort is a loopback port free a moment ago that this process has not
// handed out before; another process may still take it (startPod retries).
func freePort(t *testing.T) int {
	t.Helper()
	ports.Lock()
	defer ports.Unlock()
	if ports.used == nil {
		ports.used = map[int]bool{}
	}
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if !ports.used[port] {
			ports.used[port] = true
			return port
		}
	}
	t.Fatal("no free port in 20 tries")
	return 0
}
