package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/redistest"
)

// TestAdvanceAfterRestore is the proof behind idalloc advance (docs/api.md §3,
// "A store that forgets"): a database restored from a dump hands instances
// started afterwards the ranges an instance took after the dump, and
// `idalloc advance -by N` (N above what was taken) stops that. An instance
// takes IDs through many small segments after a mariadb-dump and is killed
// with -9, so nothing is given back; the dump is restored; a fresh instance
// then repeats its IDs. Restored again and advanced, a fresh instance
// repeats none.
func TestAdvanceAfterRestore(t *testing.T) {
	env := setup(t)
	dumpBin := findBinary("mariadb-dump", "/usr/bin/mariadb-dump", "/usr/bin/mysqldump")
	clientBin := findBinary("mariadb", "/usr/bin/mariadb", "/usr/bin/mysql")
	if dumpBin == "" || clientBin == "" {
		t.Skip("e2e: no mariadb-dump or mariadb client on PATH: skipping the restore proof")
	}
	const (
		tag  = "e2e_restore"
		step = 10
		each = 600 // IDs per run: with max_step 50, a dozen fetches or more
		by   = 10_000
	)
	dsn := env.db.newDatabase(t)
	cfg := config(map[string]any{"segment": map[string]any{"max_step": 50}})
	first := startInstance(t, env, "first", dsn, cfg, true)
	first.createTag(t, tag, step)
	c := newClient(first.url, 5*time.Second)
	defer c.close()
	issued := takeIDs(t, c, tag, 50) // history the dump keeps

	backup := env.db.dump(t, dumpBin, dsn)
	atDump := env.db.maxID(t, dsn, tag)
	fetchesAtDump, _ := metricSum(first, "idalloc_segment_fetches_total")
	lost := takeIDs(t, c, tag, each)
	issued = append(issued, lost...)
	reserved := env.db.maxID(t, dsn, tag)
	fetches, _ := metricSum(first, "idalloc_segment_fetches_total")
	if err := first.kill9(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restore: dump at max_id %d; then %d IDs (%d..%d) taken in %.0f segment fetches, max_id %d at the kill -9",
		atDump, len(lost), lost[0], lost[len(lost)-1], fetches-fetchesAtDump, reserved)
	if reserved-atDump >= by {
		t.Fatalf("the run reserved %d IDs after the dump, not below -by %d", reserved-atDump, by)
	}

	// (a) Restored, not advanced: the hazard is real.
	env.db.restore(t, clientBin, dsn, backup)
	if got := env.db.maxID(t, dsn, tag); got != atDump {
		t.Fatalf("max_id after the restore = %d, want the dump's %d", got, atDump)
	}
	without := startInstance(t, env, "without", dsn, cfg, false)
	cw := newClient(without.url, 5*time.Second)
	defer cw.close()
	repeated := common(issued, takeIDs(t, cw, tag, each))
	if err := without.kill9(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restore without advance: a fresh instance repeated %d of its %d IDs", repeated, each)
	if repeated == 0 {
		t.Errorf("a fresh instance on the restored dump repeated no ID: the test shows no hazard")
	}

	// (b) Restored again, then advanced: none repeats.
	env.db.restore(t, clientBin, dsn, backup)
	with := newInstance(t, env, "with", dsn, cfg)
	out := runAdvance(t, env, with, "-by", strconv.Itoa(by))
	t.Logf("idalloc advance -by %d:\n%s", by, out)
	if want := "tag " + tag + ": max_id " + strconv.FormatInt(atDump, 10) + " → " + strconv.FormatInt(atDump+by, 10); !strings.Contains(out, want) {
		t.Errorf("advance printed\n%s\nwant a line %q", out, want)
	}
	if err := with.start(false); err != nil {
		t.Fatal(err)
	}
	cb := newClient(with.url, 5*time.Second)
	defer cb.close()
	after := takeIDs(t, cb, tag, each)
	repeated = common(issued, after)
	t.Logf("restore then advance -by %d: a fresh instance repeated %d of its %d IDs; its first ID %d, above the %d reserved before the kill",
		by, repeated, each, after[0], reserved)
	if repeated != 0 || after[0] <= reserved {
		t.Errorf("after advance: %d IDs repeated, first ID %d; want 0 and above %d", repeated, after[0], reserved)
	}
}

// TestAdvanceLeasesOnRedisCluster: idalloc advance raises the worker leases
// of a Redis Cluster lease store, whose clusters' hashes lie on different
// primaries, so its SCAN must reach every primary. Three instances each
// hold a lease of a snowflake cluster of their own, named for its hash
// slot: west 218, south 9379, east 10965, one in each of the ranges
// redis-cli --cluster create gives three primaries (0-5460, 5461-10922,
// 10923-16383). Each lease is raised, and each holder keeps it and issues.
func TestAdvanceLeasesOnRedisCluster(t *testing.T) {
	env := setup(t)
	rc := redistest.StartCluster(t)
	dsn := env.db.newDatabase(t)
	var ins []*instance
	for _, cluster := range []string{"west", "south", "east"} {
		cfg := config(map[string]any{"snowflake": map[string]any{
			"enabled": true, "cluster": cluster, "worker_bits": flakeWorkerBits, "lease_ttl": "3s",
		}, "lease": redisClusterLease(rc)})
		in := startInstance(t, env, cluster, dsn, cfg, len(ins) == 0)
		waitFlake(t, in, 20*time.Second)
		ins = append(ins, in)
	}
	workers := map[string]int64{}
	for _, in := range ins {
		workers[in.name] = waitLease(t, in)
	}

	out := runAdvance(t, env, ins[0], "-only", "leases", "-lease-for", "1h")
	t.Logf("idalloc advance -only leases -lease-for 1h:\n%s", out)
	for _, in := range ins {
		want := fmt.Sprintf("lease cluster %s worker %d: last_timestamp_ms ", in.name, workers[in.name])
		raised := false
		for line := range strings.Lines(out) {
			raised = raised || strings.HasPrefix(line, want) && strings.Contains(line, " → ")
		}
		if !raised {
			t.Errorf("advance printed no raise of cluster %s worker %d: want a line %q…→…", in.name, workers[in.name], want)
		}
	}
	if !strings.Contains(out, "advanced: 3 of 3 worker leases raised") {
		t.Errorf("advance printed\n%s\nwant the summary to count 3 of 3 worker leases raised", out)
	}
	for _, in := range ins {
		if got := waitLease(t, in); got != workers[in.name] {
			t.Errorf("%s holds worker %d after the advance, want still %d", in.name, got, workers[in.name])
		}
		waitFlake(t, in, 20*time.Second)
	}
}

// common counts the IDs of b that are in a.
func common(a, b []int64) int {
	in := make(map[int64]bool, len(a))
	for _, id := range a {
		in[id] = true
	}
	n := 0
	for _, id := range b {
		if in[id] {
			n++
		}
	}
	return n
}

// runAdvance runs `idalloc advance args…` with in's config and database,
// as an operator runs it beside the server, and returns what it printed.
func runAdvance(t *testing.T, env *suiteEnv, in *instance, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.bin, append([]string{"advance", "-config", in.cfgPath}, args...)...)
	cmd.Env = append(os.Environ(), "IDALLOC_DRIVER="+in.driver, "IDALLOC_DSN="+in.dsn)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("idalloc advance %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// dump writes a mariadb-dump of dsn's database to a file and returns its
// path.
func (m *mariaDB) dump(t *testing.T, bin, dsn string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, m.clientArgs(dsn, "--single-transaction", "--skip-comments")...).Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v", exitText(err))
	}
	path := filepath.Join(t.TempDir(), "dump.sql")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// restore loads a dump into dsn's database with the mariadb client, as an
// operator restores a backup: its tables are dropped and made again.
func (m *mariaDB) restore(t *testing.T, bin, dsn, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.CommandContext(t.Context(), bin, m.clientArgs(dsn)...)
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mariadb < dump: %v\n%s", err, out)
	}
}

// clientArgs are a MariaDB client's arguments for dsn's database on m.
func (m *mariaDB) clientArgs(dsn string, extra ...string) []string {
	args := []string{"--no-defaults", "--protocol=TCP", "-h127.0.0.1", "-P" + strconv.Itoa(m.port), "-uroot"}
	return append(append(args, extra...), dsn[strings.LastIndexByte(dsn, '/')+1:])
}

// exitText adds a failed command's standard error to its error.
func exitText(err error) string {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return err.Error() + ": " + string(ee.Stderr)
	}
	return err.Error()
}
