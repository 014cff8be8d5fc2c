package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestKillNineThreeInstances: three instances share one database and a tag
// of step 7 (adaptive step capped at 50, so segments are fetched all the
// time); 3×16 keep-alive clients take ≥ 200,000 IDs while instance b is
// killed with SIGKILL twice and restarted. No ID may be issued twice; each
// client's IDs from one incarnation must strictly increase; each new
// incarnation of b must start above every ID seen before it started.
func TestKillNineThreeInstances(t *testing.T) {
	env := setup(t)
	const (
		tag         = "e2e_kill9"
		target      = 200_000
		perInstance = 16
		step        = 7
	)
	dsn := env.db.newDatabase(t)
	cfg := config(map[string]any{"segment": map[string]any{"max_step": 50}})
	a := startInstance(t, env, "a", dsn, cfg, true)
	a.createTag(t, tag, step)
	b := startInstance(t, env, "b", dsn, cfg, false)
	c := startInstance(t, env, "c", dsn, cfg, false)
	insts := []*instance{a, b, c}
	victim := b

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Second)
	defer cancel()
	var issued, globalMax atomic.Int64
	stop := make(chan struct{})
	var workers []*loadWorker
	var wg sync.WaitGroup
	stopWorkers := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopWorkers()
	began := time.Now()
	for _, in := range insts {
		for range perInstance {
			w := &loadWorker{inst: in, c: newRawClient(in.addr, 5*time.Second), path: "/alloc?app_tag=" + tag}
			workers = append(workers, w)
			wg.Go(func() {
				defer w.c.close()
				w.run(ctx, stop, &issued, &globalMax)
			})
		}
	}

	// Two SIGKILLs of b, at 30% and 65% of the target.
	type restart struct {
		atIssued  int64
		maxBefore int64 // highest ID any client had received when b was dead
		newGen    int64
		down      time.Duration
	}
	var restarts []restart
	for _, frac := range []int64{30, 65} {
		at := target * frac / 100
		if !waitFor(ctx, func() bool { return issued.Load() >= at }) {
			stopWorkers()
			t.Fatalf("only %d IDs issued in %s, before the kill at %d", issued.Load(), time.Since(began), at)
		}
		killedAt := time.Now()
		n := issued.Load()
		if err := victim.kill9(); err != nil {
			stopWorkers()
			t.Fatal(err)
		}
		maxBefore := globalMax.Load()
		gen := victim.gen.Load()
		if err := victim.start(false); err != nil {
			stopWorkers()
			t.Fatal(err)
		}
		restarts = append(restarts, restart{atIssued: n, maxBefore: maxBefore, newGen: gen, down: time.Since(killedAt)})
	}
	if !waitFor(ctx, func() bool { return issued.Load() >= target }) {
		stopWorkers()
		t.Fatalf("only %d of %d IDs issued in %s", issued.Load(), target, time.Since(began))
	}
	stopWorkers()
	elapsed := time.Since(began)

	var all []int64
	perInst := map[string]int{}
	victimGens := map[int64]*idRange{}
	var runs, ambiguous, transportErrs, unavailable, other, dials int
	var violations []string
	firstOther := ""
	for _, w := range workers {
		all = append(all, w.ids...)
		perInst[w.inst.name] += len(w.ids)
		runs += w.runs
		if rc, ok := w.c.(*rawClient); ok {
			dials += rc.dials
		}
		ambiguous += w.ambiguous
		transportErrs += w.transportErrs
		unavailable += w.unavailable
		other += w.other
		if firstOther == "" {
			firstOther = w.firstOther
		}
		violations = append(violations, w.violations...)
		if w.inst == victim {
			for g, r := range w.byGen {
				if victimGens[g] == nil {
					victimGens[g] = &idRange{}
				}
				victimGens[g].merge(r)
			}
		}
	}
	total := len(all)
	dups, examples := checkUnique(all)
	maxID := env.db.maxID(t, dsn, tag)

	t.Logf("kill9: %d IDs issued in %s (%.0f IDs/s) by 3 instances × %d clients (a=%d b=%d c=%d); %d duplicates",
		total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), perInstance, perInst["a"], perInst["b"], perInst["c"], dups)
	for i, r := range restarts {
		g := victimGens[r.newGen]
		prev := victimGens[r.newGen-1]
		var first, prevMax int64
		if g != nil {
			first = g.min
		}
		if prev != nil {
			prevMax = prev.max
		}
		t.Logf("kill9: restart %d of b: SIGKILL at %d IDs issued, back serving after %s; highest ID seen before: %d; b's previous incarnation max %d, new incarnation min %d",
			i+1, r.atIssued, ms(r.down), r.maxBefore, prevMax, first)
		switch {
		case g == nil || g.n == 0:
			t.Errorf("restart %d: b's incarnation %d issued no ID with a certain incarnation", i+1, r.newGen)
		case g.min <= r.maxBefore:
			t.Errorf("restart %d: b's new incarnation issued %d, not above %d, the highest ID received before it started", i+1, g.min, r.maxBefore)
		case prev != nil && g.min <= prev.max:
			t.Errorf("restart %d: b's new incarnation issued %d, not above its previous incarnation's %d", i+1, g.min, prev.max)
		}
	}
	t.Logf("kill9: per-client sequences checked: %d (client × incarnation), %d out of order; %d replies during a restart not attributed; %d TCP connections opened; transport errors %d, resp_code 3 answers %d, other failures %d; tag max_id at end %d (%d reserved, not issued: lost in the crashes or still buffered)",
		runs, len(violations), ambiguous, dials, transportErrs, unavailable, other, maxID, maxID-int64(total))

	if dups > 0 {
		t.Errorf("%d duplicate IDs among %d, e.g. %v", dups, total, examples)
	}
	if len(violations) > 0 {
		t.Errorf("IDs not strictly increasing per client and incarnation: %v", violations)
	}
	if other > 0 {
		t.Errorf("%d unexpected failures, first: %s", other, firstOther)
	}
	if total > 0 && all[len(all)-1] > maxID {
		t.Errorf("ID %d issued above the tag's max_id %d", all[len(all)-1], maxID)
	}
}
