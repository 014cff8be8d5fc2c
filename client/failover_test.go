//go:build unix

package client

import (
	"context"
	"crypto/rand"
	"database/sql"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlDSNEnv names the MySQL/MariaDB server of the failover test, as the
// store tests do.
const mysqlDSNEnv = "IDALLOC_TEST_MYSQL_DSN"

// mysqlDSN returns the DSN of a fresh private database idalloc_test_<random>
// on the server named by IDALLOC_TEST_MYSQL_DSN, dropped at t's cleanup;
// without the variable it skips t.
func mysqlDSN(t *testing.T) string {
	t.Helper()
	env := os.Getenv(mysqlDSNEnv)
	if env == "" {
		t.Skip(mysqlDSNEnv + " not set: skipping the two-instance failover test (it needs MySQL or MariaDB)")
	}
	cfg, err := mysql.ParseDSN(env)
	if err != nil {
		t.Fatalf("parse %s: %v", mysqlDSNEnv, err)
	}
	name := "idalloc_test_" + strings.ToLower(rand.Text()[:16]) // letters and digits only
	admin := func(stmt string) error {
		c := cfg.Clone()
		c.DBName = ""
		conn, err := mysql.NewConnector(c)
		if err != nil {
			return err
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = db.ExecContext(ctx, stmt)
		return err
	}
	if err := admin("CREATE DATABASE " + name); err != nil {
		t.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admin("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("DROP DATABASE %s: %v", name, err)
		}
	})
	cfg = cfg.Clone()
	cfg.DBName = name
	return cfg.FormatDSN()
}

// TestFailoverUnderLoad: two instances on one MariaDB, a client with both
// URLs under load from four goroutines. One instance is SIGTERMed (it
// drains, exits, and is started again); later the other is killed -9 and
// started again. An instance serves at every moment, so no error may reach
// a caller, and no ID may be handed out twice.
func TestFailoverUnderLoad(t *testing.T) {
	dsn := mysqlDSN(t)
	cfg := func() map[string]any {
		return serverConfig(t.TempDir(), map[string]any{
			"driver": "mysql", "dsn": dsn, "shutdown_drain": "1s",
		})
	}
	a := startServer(t, "a", cfg(), "-init-schema")
	b := startServer(t, "b", cfg())
	a.createTag(t, "order", 100) // short segments: the store is on the path often
	// b learns the tag at its next tag-list reload (tag_refresh 1s).
	waitTag(t, b, "order")

	// Small batches, so that fetches never stop during the faults.
	tr := newCounting()
	c := newTestClient(t, Config{URLs: []string{a.URL, b.URL}, MaxRange: 20, HTTPClient: &http.Client{Transport: tr}})
	type failure struct {
		at  time.Time
		err error
	}
	var (
		mu       sync.Mutex
		failures []failure
		lists    [4][]int64
		taken    atomic.Int64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range lists {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				id, err := c.Next(ctx, "order")
				cancel()
				if err != nil {
					mu.Lock()
					failures = append(failures, failure{time.Now(), err})
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				lists[w] = append(lists[w], id)
				taken.Add(1)
				time.Sleep(20 * time.Microsecond) // a busy caller, not a spin
			}
		})
	}
	phase := func(name string, d time.Duration) {
		time.Sleep(d)
		t.Logf("%-24s IDs so far: %7d; requests to a: %5d, to b: %5d", name, taken.Load(), tr.host(a.addr), tr.host(b.addr))
	}
	phase("both serving", time.Second)

	a.signal(syscall.SIGTERM)
	before := tr.host(a.addr)
	// Draining, a answers with Connection: close, and is set aside for a
	// second after each answer: a request or two in its 1s drain. Counted
	// over the drain alone: after it, a's exit may take a loaded machine
	// seconds, and attempts then fail to connect rather than get answers.
	time.Sleep(time.Second)
	inDrain := tr.host(a.addr) - before
	if st := a.wait(20 * time.Second); st.ExitCode() != 0 {
		t.Errorf("a exited with %v after SIGTERM, want status 0", st)
	}
	if n := inDrain; n > 4 {
		t.Errorf("a got %d requests while it drained for 1s, want it set aside after each answer", n)
	}
	phase("a drained and stopped", 500*time.Millisecond)
	if err := a.run(); err != nil {
		t.Fatal(err)
	}
	phase("a started again", time.Second)

	b.signal(syscall.SIGKILL)
	b.wait(10 * time.Second)
	phase("b killed -9", time.Second)
	if err := b.run(); err != nil {
		t.Fatal(err)
	}
	phase("b started again", time.Second)

	close(stop)
	wg.Wait()
	for _, f := range failures {
		t.Errorf("a caller got an error while an instance was serving, at %s: %v", f.at.Format("15:04:05.000"), f.err)
	}
	n := checkUnique(t, lists[:]...)
	if n < 1000 {
		t.Errorf("only %d IDs in 4.5s of load", n)
	}
	t.Logf("%d IDs, 0 duplicates, %d errors", n, len(failures))
}

// waitTag waits until s serves tag.
func waitTag(t *testing.T, s *server, tag string) {
	t.Helper()
	c := newTestClient(t, Config{URLs: []string{s.URL}})
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := c.Next(t.Context(), tag)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve %s after 15s: %v", s.name, tag, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
