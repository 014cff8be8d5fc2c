package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadWorker is one client goroutine of a load test: one keep-alive
// connection to one instance, requests one after another.
type loadWorker struct {
	inst *instance
	c    getter

	ids []int64
	// byGen is, per incarnation of inst, the range of the IDs this worker
	// got from it (only replies whose incarnation is certain).
	byGen map[int64]*idRange
	// runs counts the sequences checked for strict increase (one per
	// incarnation met); violations describes the IDs that broke one.
	runs       int
	violations []string
	ambiguous  int // replies during a restart: incarnation unknown

	transportErrs int
	unavailable   int // resp_code 3
	other         int // any other failure
	firstOther    string
}

type idRange struct {
	min, max int64
	n        int
}

func (r *idRange) add(id int64) {
	if r.n == 0 || id < r.min {
		r.min = id
	}
	if r.n == 0 || id > r.max {
		r.max = id
	}
	r.n++
}

func (r *idRange) merge(o *idRange) {
	if o == nil || o.n == 0 {
		return
	}
	if r.n == 0 || o.min < r.min {
		r.min = o.min
	}
	if r.n == 0 || o.max > r.max {
		r.max = o.max
	}
	r.n += o.n
}

// atomicMax raises m to v.
func atomicMax(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// run requests path until stop or ctx ends. A reply belongs to incarnation g
// when inst.gen read g both before and after it; the IDs of one worker from
// one incarnation must strictly increase.
func (w *loadWorker) run(ctx context.Context, stop <-chan struct{}, path string, issued, globalMax *atomic.Int64) {
	w.byGen = map[int64]*idRange{}
	curGen, last := int64(-1), int64(0)
	pause := func() {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-stop:
		case <-ctx.Done():
		}
	}
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		g0 := w.inst.gen.Load()
		r, err := w.c.get(path)
		g1 := w.inst.gen.Load()
		switch {
		case err != nil:
			w.transportErrs++
			pause()
			continue
		case r.RespCode == 3 && r.HTTPStatus == http.StatusServiceUnavailable:
			w.unavailable++
			pause()
			continue
		case r.RespCode != 0 || r.HTTPStatus != http.StatusOK:
			w.other++
			if w.firstOther == "" {
				w.firstOther = fmt.Sprintf("HTTP %d resp_code %d %q", r.HTTPStatus, r.RespCode, r.Msg)
			}
			pause()
			continue
		}
		w.ids = append(w.ids, r.ID)
		issued.Add(1)
		atomicMax(globalMax, r.ID)
		if g0 != g1 {
			w.ambiguous++
			continue
		}
		if g0 != curGen {
			curGen, last = g0, 0
			w.runs++
		}
		if r.ID <= last && len(w.violations) < 5 {
			w.violations = append(w.violations, fmt.Sprintf("%s incarnation %d: id %d after %d", w.inst.name, g0, r.ID, last))
		}
		last = r.ID
		rg := w.byGen[g0]
		if rg == nil {
			rg = &idRange{}
			w.byGen[g0] = rg
		}
		rg.add(r.ID)
	}
}

// waitFor polls cond every 10ms until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

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
			w := &loadWorker{inst: in, c: newRawClient(in.addr, 5*time.Second)}
			workers = append(workers, w)
			wg.Go(func() {
				defer w.c.close()
				w.run(ctx, stop, "/alloc?app_tag="+tag, &issued, &globalMax)
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

// takeIDs takes n IDs one by one; each must succeed, and they must strictly
// increase (one client, one instance).
func takeIDs(t *testing.T, c *client, tag string, n int) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	for range n {
		r, err := c.get("/alloc?app_tag=" + tag)
		if err != nil {
			t.Fatalf("alloc: %v", err)
		}
		if r.HTTPStatus != http.StatusOK || r.RespCode != 0 {
			t.Fatalf("alloc: HTTP %d resp_code %d %q", r.HTTPStatus, r.RespCode, r.Msg)
		}
		if len(ids) > 0 && r.ID <= ids[len(ids)-1] {
			t.Fatalf("alloc: id %d after %d", r.ID, ids[len(ids)-1])
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// TestGracefulRestartThenKillNine: a single instance restarted gracefully
// twice wastes no ID (the first ID after a restart is the last before plus
// one, and the row's max_id after the stop is that last ID); then a kill -9
// after a graceful restart: the next ID is above everything reserved before.
func TestGracefulRestartThenKillNine(t *testing.T) {
	env := setup(t)
	const (
		tag  = "e2e_graceful"
		step = 100
		each = 250 // beyond the first segment, into the prefetched one
	)
	dsn := env.db.newDatabase(t)
	in := startInstance(t, env, "solo", dsn, config(nil), true)
	in.createTag(t, tag, step)
	c := newClient(in.url, 5*time.Second)
	defer c.close()

	batch := takeIDs(t, c, tag, each)
	all := slices.Clone(batch)
	for round := 1; round <= 2; round++ {
		last := batch[len(batch)-1]
		took, err := in.stopGracefully(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		maxAfterStop := env.db.maxID(t, dsn, tag)
		startedAt := time.Now()
		if err := in.start(false); err != nil {
			t.Fatal(err)
		}
		startTook := time.Since(startedAt)
		batch = takeIDs(t, c, tag, each)
		all = append(all, batch...)
		t.Logf("graceful: restart %d: last ID before %d, max_id after the stop %d, first ID after %d (wasted %d); stop took %s (exit 0), start %s",
			round, last, maxAfterStop, batch[0], batch[0]-last-1, ms(took), ms(startTook))
		if batch[0] != last+1 {
			t.Errorf("graceful restart %d: first ID after is %d, want %d (last before + 1)", round, batch[0], last+1)
		}
		if maxAfterStop != last {
			t.Errorf("graceful restart %d: max_id after the stop is %d, want %d (every unused ID given back)", round, maxAfterStop, last)
		}
	}

	// kill -9 after the graceful restarts.
	last := batch[len(batch)-1]
	reserved := env.db.maxID(t, dsn, tag)
	if err := in.kill9(); err != nil {
		t.Fatal(err)
	}
	reservedAfterKill := env.db.maxID(t, dsn, tag)
	if err := in.start(false); err != nil {
		t.Fatal(err)
	}
	batch = takeIDs(t, c, tag, each)
	all = append(all, batch...)
	t.Logf("graceful: kill -9 after 2 graceful restarts: last ID before %d, max_id when killed %d, first ID after %d (gap %d lost in the crash)",
		last, max(reserved, reservedAfterKill), batch[0], batch[0]-last-1)
	if batch[0] <= max(last, reservedAfterKill) {
		t.Errorf("after kill -9: first ID %d is not above %d (last issued) and %d (max_id reserved before the restart)", batch[0], last, reservedAfterKill)
	}
	n := len(all)
	dups, examples := checkUnique(all)
	t.Logf("graceful: %d IDs over 4 incarnations (2 graceful restarts, 1 kill -9), %d duplicates", n, dups)
	if dups > 0 {
		t.Errorf("%d duplicate IDs, e.g. %v", dups, examples)
	}
}

// TestDatabaseFrozen: the private MariaDB is frozen with SIGSTOP for 10s.
// Buffered IDs keep flowing; /health turns degraded within 10s; once the
// buffer is drained, /alloc answers resp_code 3 with Retry-After, each in
// well under 2s; after SIGCONT the instance recovers on its own.
func TestDatabaseFrozen(t *testing.T) {
	env := setup(t)
	const (
		tag       = "e2e_frozen"
		step      = 50
		freezeFor = 10 * time.Second
		answerMax = 2 * time.Second
	)
	dsn := env.db.newDatabase(t)
	in := startInstance(t, env, "solo", dsn, config(map[string]any{"segment": map[string]any{"max_step": step}}), true)
	in.createTag(t, tag, step)
	// Above answerMax, so a slow answer is measured rather than cut short.
	c := newClient(in.url, 10*time.Second)
	defer c.close()

	type timed struct {
		r    reply
		took time.Duration
	}
	var ids []int64
	alloc := func() timed {
		t.Helper()
		start := time.Now()
		r, err := c.get("/alloc?app_tag=" + tag)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("alloc after %s: %v", ms(took), err)
		}
		if r.RespCode == 0 {
			ids = append(ids, r.ID)
		}
		return timed{r, took}
	}
	health := func(query string) reply {
		t.Helper()
		r, err := in.ctl.get("/health" + query)
		if err != nil {
			t.Fatalf("health: %v", err)
		}
		return r
	}

	// Prime: the first segment is in use and the next one prefetched.
	ids = takeIDs(t, c, tag, 10)
	deadline := time.Now().Add(5 * time.Second)
	var left int64
	for {
		left = health("?app_tag=" + tag).Left
		if left >= 2*step-10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left < 2*step-10 {
		t.Fatalf("prefetch: %d IDs buffered after 5s, want %d", left, 2*step-10)
	}
	if h := health(""); h.Status != "ok" {
		t.Fatalf("/health before the freeze: %+v, want ok", h)
	}

	env.db.freeze(t)
	frozenAt := time.Now()

	// Buffered IDs flow with the database frozen.
	var flowMax time.Duration
	for range 20 {
		a := alloc()
		if a.r.RespCode != 0 {
			t.Fatalf("buffered ID refused with the database frozen (%d left before): HTTP %d %+v", left, a.r.HTTPStatus, a.r)
		}
		flowMax = max(flowMax, a.took)
	}

	// /health turns degraded within 10s (buffered IDs remain).
	var degradedAfter time.Duration
	for degradedAfter == 0 {
		h := health("")
		switch {
		case h.HTTPStatus == http.StatusOK && h.Status == "degraded":
			degradedAfter = time.Since(frozenAt)
		case h.HTTPStatus != http.StatusOK:
			t.Fatalf("/health with the database frozen and IDs buffered: HTTP %d %+v, want 200 degraded", h.HTTPStatus, h)
		case time.Since(frozenAt) > 10*time.Second:
			t.Fatalf("/health still %q 10s after the database froze, want degraded", h.Status)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Drain the buffer: every ID left is served, then resp_code 3.
	servedFrozen := 20
	var drainedAfter time.Duration
	var first timed
	for i := 0; ; i++ {
		if i > 2*step {
			t.Fatalf("still serving after %d more IDs with the database frozen (only %d were buffered)", i, left)
		}
		a := alloc()
		if a.r.RespCode == 0 {
			servedFrozen++
			flowMax = max(flowMax, a.took)
			continue
		}
		first, drainedAfter = a, time.Since(frozenAt)
		break
	}
	checkUnavailable := func(what string, a timed) {
		t.Helper()
		if a.r.HTTPStatus != http.StatusServiceUnavailable || a.r.RespCode != 3 || a.r.RetryAfter == "" {
			t.Errorf("%s: HTTP %d resp_code %d Retry-After %q (%q), want 503, 3 and a Retry-After", what, a.r.HTTPStatus, a.r.RespCode, a.r.RetryAfter, a.r.Msg)
		}
		if a.took >= answerMax {
			t.Errorf("%s: answered after %s, want under %s", what, ms(a.took), answerMax)
		}
	}
	checkUnavailable("first /alloc with the buffer drained", first)
	if h := health(""); h.HTTPStatus != http.StatusServiceUnavailable || h.RespCode != 3 || h.Status != "unavailable" || h.RetryAfter == "" {
		t.Errorf("/health with the database frozen and nothing buffered: HTTP %d %+v, want 503 unavailable with Retry-After", h.HTTPStatus, h)
	}

	// Until the end of the freeze: resp_code 3, promptly, every time.
	refused, refusedMax := 1, first.took
	for time.Since(frozenAt) < freezeFor {
		a := alloc()
		if a.r.RespCode == 0 {
			t.Errorf("an ID (%d) was issued with the database frozen and the buffer drained", a.r.ID)
			continue
		}
		checkUnavailable("/alloc with the database frozen", a)
		refused++
		refusedMax = max(refusedMax, a.took)
		time.Sleep(200 * time.Millisecond)
	}

	env.db.thaw(t)
	thawedAt := time.Now()
	frozenFor := thawedAt.Sub(frozenAt)

	// Recovery on its own, within a bounded time.
	var allocBack, healthBack time.Duration
	for allocBack == 0 || healthBack == 0 {
		if time.Since(thawedAt) > 30*time.Second {
			t.Fatalf("not recovered 30s after SIGCONT: first ID after %s, /health ok after %s", allocBack, healthBack)
		}
		if allocBack == 0 {
			if a := alloc(); a.r.RespCode == 0 {
				allocBack = time.Since(thawedAt)
			} else {
				checkUnavailable("/alloc while the database recovers", a)
			}
		}
		if healthBack == 0 {
			if h := health(""); h.HTTPStatus == http.StatusOK && h.Status == "ok" {
				healthBack = time.Since(thawedAt)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 100 {
		if a := alloc(); a.r.RespCode != 0 {
			t.Fatalf("after recovery: HTTP %d %+v", a.r.HTTPStatus, a.r)
		}
	}

	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Errorf("IDs not strictly increasing: %d after %d", ids[i], ids[i-1])
			break
		}
	}
	dups, examples := checkUnique(slices.Clone(ids))
	t.Logf("frozen: database frozen %s; %d buffered IDs served while frozen (slowest %s); /health degraded after %s; buffer drained after %s; %d resp_code 3 answers (503, Retry-After), slowest %s",
		ms(frozenFor), servedFrozen, ms(flowMax), ms(degradedAfter), ms(drainedAfter), refused, ms(refusedMax))
	t.Logf("frozen: after SIGCONT: first ID after %s, /health ok after %s; %d IDs in all, %d duplicates",
		ms(allocBack), ms(healthBack), len(ids), dups)
	if dups > 0 {
		t.Errorf("%d duplicate IDs, e.g. %v", dups, examples)
	}
}
