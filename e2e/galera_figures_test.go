package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// figuresEnv turns TestGaleraScalingFigures on.
const figuresEnv = "IDALLOC_TEST_GALERA_FIGURES"

// figuresConfig is one configuration measured: the row's step and
// segment.max_step (equal: the step is pinned; larger: it adapts).
type figuresConfig struct {
	name             string
	rowStep, maxStep int64
}

// figuresResult is what one configuration measured. The store figures are
// the differences of the instances' /metrics over the load, summed.
type figuresResult struct {
	cfg                        figuresConfig
	elapsed                    time.Duration
	ids, batchIDs, singleIDs   int64
	requests                   int64
	unavailable, other         int
	transport                  int
	firstOther                 string
	firstTransport             string
	dups, outOfOrder, overlaps int64
	fetches, fetchErrors       float64
	conflicts, refused, tmo    float64
	steps                      []float64 // idalloc_segment_step per instance at the end
	writeSets                  int64     // wsrep_last_committed on node 1 over the load
	certFailures, bfAborts     int64     // summed over the nodes
	maxID, highest             int64
}

// TestGaleraScalingFigures measures, on the shared 3-node Galera cluster,
// what the segment step does to the database: three instances (one per
// node, the plain DSN of its node) serve one tag to batch clients
// (count=1000) and single-ID clients for a fixed time, at steps 100, 10,000
// and 1,000,000 pinned (segment.max_step = the row's step) and with the
// adaptive step (row step 100, max_step 1,000,000). It reports IDs/s,
// database writes (successful segment fetches) per second and per 1 M IDs/s,
// store conflicts, fetch errors and 503 answers; it fails only on a
// duplicate or out-of-order ID. It is a measurement, not a check: it runs
// only with IDALLOC_TEST_GALERA_FIGURES=1, and its figures depend on the
// machine (the instances, the nodes and the clients share its cores).
func TestGaleraScalingFigures(t *testing.T) {
	if os.Getenv(figuresEnv) != "1" {
		t.Skip("galera figures: set " + figuresEnv + "=1 to measure writes and conflicts per step on the Galera cluster (a measurement, not run in CI)")
	}
	c := setupGalera(t)
	const (
		runFor        = 10 * time.Second
		batch         = 1000
		batchClients  = 4 // per instance
		singleClients = 1 // per instance
	)
	configs := []figuresConfig{
		{"step 100 pinned", 100, 100},
		{"step 10,000 pinned", 10_000, 10_000},
		{"step 1,000,000 pinned", 1_000_000, 1_000_000},
		{"adaptive 100 → 1,000,000", 100, 1_000_000},
	}
	var results []figuresResult
	for i, fc := range configs {
		t.Run(fmt.Sprintf("%d_step_%d_max_%d", i+1, fc.rowStep, fc.maxStep), func(t *testing.T) {
			r := measureGalera(t, c, fc, runFor, batch, batchClients, singleClients)
			results = append(results, r)
			if r.dups > 0 {
				t.Errorf("%s: %d duplicate IDs among %d (%d overlapping runs)", fc.name, r.dups, r.ids, r.overlaps)
			}
			if r.outOfOrder > 0 {
				t.Errorf("%s: %d replies whose IDs did not all lie above the client's previous ones", fc.name, r.outOfOrder)
			}
			if r.other > 0 {
				t.Errorf("%s: %d unexpected answers, first: %s", fc.name, r.other, r.firstOther)
			}
			if r.highest > r.maxID {
				t.Errorf("%s: ID %d issued above the tag's max_id %d", fc.name, r.highest, r.maxID)
			}
		})
	}
	if len(results) == 0 {
		return
	}

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "config\tIDs issued\tIDs/s\tfetches (writes)\twrites/s\twrites/s per 1M IDs/s\tideal: 1M ÷ step\tconflicts\tconflicts/s\tfetch errors\t503s\tstep reached\t")
	for _, r := range results {
		sec := r.elapsed.Seconds()
		idsPerSec := float64(r.ids) / sec
		writes := r.fetches - r.fetchErrors
		writesPerSec := writes / sec
		perM, ideal := "-", "-"
		if idsPerSec > 0 {
			perM = strconv.FormatFloat(writesPerSec/(idsPerSec/1e6), 'f', 1, 64)
		}
		if r.cfg.rowStep == r.cfg.maxStep {
			ideal = strconv.FormatFloat(1e6/float64(r.cfg.rowStep), 'f', 1, 64)
		}
		var steps []string
		for _, s := range r.steps {
			steps = append(steps, strconv.FormatFloat(s, 'f', 0, 64))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.1f\t%s\t%s\t%.0f\t%.1f\t%.0f\t%d\t%s\t\n",
			r.cfg.name, r.ids, idsPerSec, writes, writesPerSec, perM, ideal,
			r.conflicts, r.conflicts/sec, r.fetchErrors, r.unavailable, strings.Join(steps, "/"))
	}
	_ = tw.Flush()
	t.Logf("galera figures: 3 instances (one per node, plain DSN) × (%d batch clients count=%d + %d single-ID client) for %s per config, fresh database each; the machine has %d CPUs shared by the 3 nodes, the 3 instances and the clients:\n%s",
		batchClients, batch, singleClients, runFor, runtime.NumCPU(), b.String())

	b.Reset()
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "config\tseconds\trequests\tbatch IDs\tsingle IDs\tduplicates\tout of order\tgalera write sets\tcert failures\tBF aborts\tfetch timeouts\tranges refused\ttransport errs\tmax_id\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.2f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t%d\t\n",
			r.cfg.name, r.elapsed.Seconds(), r.requests, r.batchIDs, r.singleIDs, r.dups, r.outOfOrder,
			r.writeSets, r.certFailures, r.bfAborts, r.tmo, r.refused, r.transport, r.maxID)
	}
	_ = tw.Flush()
	t.Logf("galera figures, cross-checks (galera write sets: wsrep_last_committed on node 1 over the load, every write set the cluster committed; cert failures and BF aborts: wsrep_local_cert_failures and wsrep_local_bf_aborts summed over the nodes):\n%s", b.String())
}

// measureGalera runs one configuration on a fresh database.
func measureGalera(t *testing.T, c *galeraCluster, fc figuresConfig, runFor time.Duration, batch, batchClients, singleClients int) figuresResult {
	t.Helper()
	const tag = "g_figures"
	db := c.newDatabase(t)
	galeraSchema(t, c, db, tag, fc.rowStep)
	insts := galeraInstances(t, c, db, config(map[string]any{"segment": map[string]any{"max_step": fc.maxStep}}))
	startTogether(t, insts)

	r := figuresResult{cfg: fc}
	type scrape struct{ fetches, errors, conflicts, refused, tmo float64 }
	read := func() (s scrape) {
		for _, in := range insts {
			f, _ := metricSum(in, "idalloc_segment_fetches_total")
			e, _ := metricSum(in, "idalloc_segment_fetch_errors_total")
			k, _ := metricSum(in, "idalloc_store_conflicts_total")
			rf, _ := metricSum(in, "idalloc_segment_ranges_refused_total")
			to, _ := metricSum(in, "idalloc_segment_fetch_timeouts_total")
			s.fetches += f
			s.errors += e
			s.conflicts += k
			s.refused += rf
			s.tmo += to
		}
		return s
	}
	wsrep := func() (committed, cert, bf int64) {
		committed = wsrepStatus(t, c.nodes[0], "wsrep_last_committed")
		for _, n := range c.nodes {
			cert += wsrepStatus(t, n, "wsrep_local_cert_failures")
			bf += wsrepStatus(t, n, "wsrep_local_bf_aborts")
		}
		return committed, cert, bf
	}
	before := read()
	committed0, cert0, bf0 := wsrep()

	ctx, cancel := context.WithTimeout(t.Context(), runFor+30*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var workers []*figuresWorker
	batchPath := "/alloc?app_tag=" + tag + "&count=" + strconv.Itoa(batch)
	singlePath := "/alloc?app_tag=" + tag
	began := time.Now()
	for _, in := range insts {
		for i := range batchClients + singleClients {
			w := &figuresWorker{inst: in, path: batchPath, batch: true}
			if i >= batchClients {
				w.path, w.batch = singlePath, false
			}
			workers = append(workers, w)
			wg.Go(func() { w.run(ctx, stop) })
		}
	}
	select {
	case <-time.After(runFor):
	case <-ctx.Done():
	}
	close(stop)
	wg.Wait()
	r.elapsed = time.Since(began)

	after := read()
	committed1, cert1, bf1 := wsrep()
	r.fetches = after.fetches - before.fetches
	r.fetchErrors = after.errors - before.errors
	r.conflicts = after.conflicts - before.conflicts
	r.refused = after.refused - before.refused
	r.tmo = after.tmo - before.tmo
	r.writeSets, r.certFailures, r.bfAborts = committed1-committed0, cert1-cert0, bf1-bf0
	for _, in := range insts {
		s, _ := metricSum(in, "idalloc_segment_step")
		r.steps = append(r.steps, s)
	}

	var runs []idRun
	for _, w := range workers {
		runs = append(runs, w.runs...)
		r.requests += w.requests
		if w.batch {
			r.batchIDs += w.idsN
		} else {
			r.singleIDs += w.idsN
		}
		r.unavailable += w.unavailable
		r.transport += w.transport
		if r.firstTransport == "" {
			r.firstTransport = w.firstTransport
		}
		r.other += w.other
		if r.firstOther == "" {
			r.firstOther = w.firstOther
		}
		r.outOfOrder += w.outOfOrder
	}
	r.ids = r.batchIDs + r.singleIDs
	var union int64
	union, r.overlaps, r.highest = unionOf(runs)
	r.dups = r.ids - union

	qctx, qcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer qcancel()
	if err := c.nodes[0].admin.QueryRowContext(qctx, "SELECT max_id FROM "+db+".segments WHERE app_tag = ?", tag).Scan(&r.maxID); err != nil {
		t.Fatalf("read max_id: %v", err)
	}
	sec := r.elapsed.Seconds()
	t.Logf("%s: %d IDs in %s (%.0f IDs/s; %d batch, %d single) over %d requests; %.0f fetches (%.0f failed), %.0f conflicts, %d 503s, %d transport errors (first: %q); %d duplicates; step reached %v",
		fc.name, r.ids, r.elapsed.Round(time.Millisecond), float64(r.ids)/sec, r.batchIDs, r.singleIDs, r.requests,
		r.fetches, r.fetchErrors, r.conflicts, r.unavailable, r.transport, r.firstTransport, r.dups, r.steps)
	return r
}

// wsrepStatus reads a numeric global status variable of node n.
func wsrepStatus(t *testing.T, n *galeraNode, name string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var k, v string
	if err := n.admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		t.Fatalf("galera node %d: SHOW GLOBAL STATUS LIKE %q: %v", n.n, name, err)
	}
	x, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("galera node %d: %s = %q: %v", n.n, name, v, err)
	}
	return x
}
