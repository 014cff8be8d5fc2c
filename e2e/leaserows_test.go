package e2e

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLeaseRowsDeletedSQL (issue 29): instances A and B hold the two worker
// IDs of a cluster (worker_bits 1, lease_ttl 3s) on MariaDB and issue
// snowflake IDs under load; the cluster's worker_leases rows are deleted
// three times about 3.3s apart (DELETE ... WHERE cluster = ?), then, once
// both issue again, the row of A's worker ID alone. The rows of cluster ""
// (the genesis row) stay, so the table may look like one that lost
// nothing; yet each old holder issues until its next renewal finds its row
// gone, and a grant of a deleted worker ID that did not wait would issue
// beside it.
// No ID may occur twice, and A must wait out its next grant after its row
// alone was deleted (/health's snowflake_wait_ms).
func TestLeaseRowsDeletedSQL(t *testing.T) {
	const (
		cluster   = "e2e"
		deletions = 3
		apart     = 3300 * time.Millisecond
		tail      = 3 * time.Second // load after the last deletion's wait
	)
	env := setup(t)
	dsn := env.db.newDatabase(t)
	name := dsn[strings.LastIndexByte(dsn, '/')+1:]
	cfg := config(map[string]any{"snowflake": map[string]any{
		"enabled": true, "cluster": cluster, "worker_bits": flakeWorkerBits,
		"lease_ttl": forgetTTL.String(), "max_drift_error": forgetDrift.String(),
	}})
	a := startInstance(t, env, "a", dsn, cfg, true)
	b := startInstance(t, env, "b", dsn, cfg, false)
	waitFlake(t, a, 20*time.Second)
	waitFlake(t, b, 20*time.Second)
	t.Logf("A holds worker %d, B worker %d", waitLease(t, a), waitLease(t, b))

	load := newFlakeLoad()
	defer load.stop()
	load.hammer(a)
	load.hammer(b)
	time.Sleep(500 * time.Millisecond)

	start := time.Now()
	deleteRows := func(where string, args ...any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := env.db.admin.ExecContext(ctx, "DELETE FROM "+name+".worker_leases WHERE "+where, args...)
		if err != nil {
			t.Fatalf("DELETE ... WHERE %s: %v", where, err)
		}
		n, _ := res.RowsAffected()
		t.Logf("%s: DELETE ... WHERE %s %v: %d rows", ms(time.Since(start)), where, args, n)
	}
	// Each deletion follows a renewal of worker 0's row at once, so the
	// holder of worker 1 finds its row gone first; its next grant is of
	// the lowest ID with no row, 0, whose holder issues on until its own
	// next renewal.
	for i := range deletions {
		if i > 0 {
			time.Sleep(apart)
		}
		afterRenewal(t, env, name, cluster, 0)
		deleteRows("cluster = ?", cluster)
	}

	// Both find their rows gone at their next renewals (every TTL/3), and
	// issue again once their new grants' waits are over.
	time.Sleep(forgetTTL/3 + time.Second)
	waitOpen(t, a, 3*forgetTTL+forgetDrift+10*time.Second)
	waitOpen(t, b, 3*forgetTTL+forgetDrift+10*time.Second)
	wa := waitLease(t, a)
	deleted := time.Now()
	deleteRows("cluster = ? AND worker_id = ?", cluster, wa)
	// A finds its row gone at its next renewal (every TTL/3); its next
	// grant of that worker ID has no history and waits.
	var aWait int64
	for aWait == 0 && time.Since(deleted) < 2*forgetTTL {
		if h, err := a.ctl.get("/health"); err == nil {
			aWait = h.SnowflakeWaitMS
		}
		time.Sleep(50 * time.Millisecond)
	}
	if aWait == 0 {
		t.Errorf("A showed no snowflake_wait_ms within %s of its row (worker %d) being deleted: its next grant did not wait", 2*forgetTTL, wa)
	} else {
		t.Logf("A: snowflake_wait_ms %d at %s after its row (worker %d) was deleted", aWait, ms(time.Since(deleted)), wa)
	}
	waitOpen(t, a, 2*forgetTTL+forgetDrift+10*time.Second)
	time.Sleep(tail)
	load.stop()

	all, perWorker := load.ids()
	n := len(all)
	dups, examples := checkUnique(all)
	t.Logf("IDs: A %d %v, B %d %v (per worker ID); answers: A %v, B %v; %d in all over %s, %d duplicates",
		load.count("a"), perWorker["a"], load.count("b"), perWorker["b"], load.answers("a"), load.answers("b"),
		n, ms(time.Since(start)), dups)
	if dups > 0 {
		t.Errorf("%d duplicate snowflake IDs, e.g. %v", dups, examples)
		for _, id := range examples {
			t.Logf("duplicate %d: %s", id, load.where(a, id, start))
		}
	}
	if load.count("a") == 0 || load.count("b") == 0 {
		t.Errorf("A issued %d IDs and B %d: both must issue", load.count("a"), load.count("b"))
	}
	if errs := load.transportErrs(); errs > 0 {
		t.Errorf("%d transport errors on the load clients, the first: %v", errs, load.firstErr)
	}
}

// afterRenewal returns as soon as the row of workerID in cluster has been
// renewed (its expires_at moved), at most 5s after the call.
func afterRenewal(t *testing.T, env *suiteEnv, database, cluster string, workerID int64) {
	t.Helper()
	read := func() string {
		var at string
		err := env.db.admin.QueryRowContext(t.Context(), "SELECT expires_at FROM "+database+".worker_leases WHERE cluster = ? AND worker_id = ?",
			cluster, workerID).Scan(&at)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("read the lease of worker %d: %v", workerID, err)
		}
		return at
	}
	first := read()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if at := read(); at != "" && at != first {
			return
		}
	}
	t.Logf("worker %d's row was not renewed within 5s; going on", workerID)
}
