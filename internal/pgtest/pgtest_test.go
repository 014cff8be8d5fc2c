package pgtest_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/pgtest"
)

// TestFailover: a row committed on the primary is on its synchronous
// standby, which takes writes after the primary is killed and it is
// promoted; a multi-host DSN then finds it.
func TestFailover(t *testing.T) {
	p := pgtest.Start(t)
	s := p.AddStandby(t, pgtest.Sync)
	p.Exec(t, `CREATE TABLE t (v int)`)
	p.Exec(t, `INSERT INTO t VALUES (42)`)
	p.Kill()
	s.Promote(t)

	db, err := sql.Open("pgx", pgtest.MultiHost("postgres", p, s))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (43)`); err != nil {
		t.Fatalf("write after promotion: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows after failover = %d (err %v), want 2", n, err)
	}
}
