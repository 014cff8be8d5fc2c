package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestGaleraNodeKilled: three instances, one per node of the Galera cluster,
// serve one tag of step 10 (max_step 10) to 4 clients each. Node 2 is
// killed with SIGKILL under that load: the instances on nodes 1 and 3 must
// keep issuing IDs (after the cluster's few seconds of suspicion). Node 2 is
// then restarted (recovered position, incremental transfer) and polled until
// Synced, and its instance must serve again. No ID may be issued twice, and
// each client's IDs must strictly increase throughout.
func TestGaleraNodeKilled(t *testing.T) {
	c := setupGalera(t)
	const (
		tag         = "g_kill"
		perInstance = 4
		want        = 200 // IDs each instance must issue in each phase
	)
	db := c.newDatabase(t)
	galeraSchema(t, c, db, tag, galeraStep)
	insts := galeraInstances(t, c, db, config(map[string]any{"segment": map[string]any{"max_step": galeraStep}}))
	startTogether(t, insts)
	const victim = 1 // node 2, instance b
	node := c.nodes[victim]

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	issued := []*atomic.Int64{{}, {}, {}}
	began := time.Now()
	wait := loadTag(ctx, insts, perInstance, tag, issued)
	defer wait()
	snapshot := func() []int64 {
		s := make([]int64, len(issued))
		for i, n := range issued {
			s[i] = n.Load()
		}
		return s
	}
	// grew waits up to limit until every instance of which has issued
	// want IDs more than at base, and returns how long that took.
	grew := func(what string, base []int64, limit time.Duration, which ...int) time.Duration {
		t.Helper()
		from := time.Now()
		wctx, wcancel := context.WithTimeout(ctx, limit)
		defer wcancel()
		ok := waitFor(wctx, func() bool {
			for _, i := range which {
				if issued[i].Load() < base[i]+want {
					return false
				}
			}
			return true
		})
		if !ok {
			wait()
			t.Fatalf("%s: not every one of instances %v issued %d more IDs within %s (issued now %v, before %v)",
				what, which, want, limit, snapshot(), base)
		}
		return time.Since(from)
	}

	grew("warm-up", snapshot(), 30*time.Second, 0, 1, 2)
	atKill := snapshot()
	killedAt := time.Now()
	if err := node.kill9(); err != nil {
		wait()
		t.Fatal(err)
	}
	survived := grew("after the kill of node 2", atKill, 60*time.Second, 0, 2)
	// Restart only once the survivors serve (their suspicion of the dead node
	// has run out), and no sooner than 3 s after the kill: a node that comes
	// back within about a second waits for its old self to be evicted.
	if d := 3*time.Second - time.Since(killedAt); d > 0 {
		time.Sleep(d)
	}
	downAt := snapshot()
	restartAt := time.Now()
	pos, recovery, err := node.restart()
	if err != nil {
		wait()
		t.Fatal(err)
	}
	if err := node.waitSynced(galeraSynced); err != nil {
		wait()
		t.Fatal(err)
	}
	synced := time.Since(restartAt)
	atSynced := snapshot()
	recovered := grew("after node 2 rejoined", atSynced, 60*time.Second, 0, 1, 2)
	workers := wait()
	elapsed := time.Since(began)

	s := summarize(workers)
	n := len(s.ids)
	transfer := "recovered no position in " + ms(recovery) + ", restarted for a full state transfer"
	if pos != "" {
		transfer = "recovered position " + pos + " in " + ms(recovery) + ", restarted there"
	}
	t.Logf("galera kill: %d IDs in %s from 3 instances × %d clients (a=%d b=%d c=%d); %d duplicates",
		n, elapsed.Round(time.Millisecond), perInstance, s.perInst["a"], s.perInst["b"], s.perInst["c"], s.dups)
	t.Logf("galera kill: node 2 killed at a=%d b=%d c=%d IDs; a and c issued %d more each within %s; b issued %d while its node was down (buffered)",
		atKill[0], atKill[1], atKill[2], want, ms(survived), downAt[1]-atKill[1])
	t.Logf("galera kill: node 2 %s, Synced %s after the restart (%s after the kill); then every instance issued %d more within %s",
		transfer, ms(synced), ms(restartAt.Add(synced).Sub(killedAt)), want, ms(recovered))
	t.Logf("galera kill: 503 resp_code 3 answers a=%d b=%d c=%d; transport errors %d; other failures %d; out-of-order IDs per client %d",
		s.unavailable["a"], s.unavailable["b"], s.unavailable["c"], sum(s.transport), s.other, len(s.violations))
	t.Logf("galera kill: %s; %s; %s", storeFigures(insts[0]), storeFigures(insts[1]), storeFigures(insts[2]))
	if s.dups > 0 {
		t.Errorf("%d duplicate IDs among %d, e.g. %v", s.dups, n, s.dupExamples)
	}
	if len(s.violations) > 0 {
		t.Errorf("IDs not strictly increasing per client: %v", s.violations)
	}
	if s.other > 0 {
		t.Errorf("%d unexpected failures, first: %s", s.other, s.firstOther)
	}
}
