package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// fetchRange is one range a Fetch returned: [lo, hi].
type fetchRange struct {
	lo, hi int64
	node   int
}

// TestGaleraStoreFetchesNeverOverlap: 12 fetchers, 4 per node of a 3-node
// Galera cluster, fetch segments of one row (step 10) through the store's Fetch
// for 8 s. On a multi-primary cluster a row lock is local to one node, so
// only a fetch whose decisive statement proves the range keeps the ranges
// apart: no two ranges any fetcher received may overlap. Fetch errors (lost
// races the store gave up on) are allowed and counted.
func TestGaleraStoreFetchesNeverOverlap(t *testing.T) {
	c := setupGalera(t)
	const (
		tag       = "g_store"
		perNode   = 4
		runFor    = 8 * time.Second
		minPerRun = 100
	)
	db := c.newDatabase(t)
	galeraSchema(t, c, db, tag, galeraStep)

	stores := make([]*store.MySQL, len(c.nodes))
	for i, n := range c.nodes {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		st, err := store.OpenMySQL(ctx, n.dsn(db), store.MySQLOptions{})
		cancel()
		if err != nil {
			t.Fatalf("open store on galera node %d: %v", n.n, err)
		}
		defer st.Close()
		stores[i] = st
	}

	type fetcher struct {
		node   int
		ranges []fetchRange
		errs   map[string]int
		took   time.Duration
	}
	var fetchers []*fetcher
	ctx, cancel := context.WithTimeout(t.Context(), runFor+30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	began := time.Now()
	end := began.Add(runFor)
	for i, st := range stores {
		for range perNode {
			f := &fetcher{node: i + 1, errs: map[string]int{}}
			fetchers = append(fetchers, f)
			wg.Go(func() {
				for time.Now().Before(end) && ctx.Err() == nil {
					t0 := time.Now()
					got, err := st.Fetch(ctx, tag, segment.MaxUsableID, 0)
					f.took += time.Since(t0)
					if err != nil {
						f.errs[errorKind(err)]++
						continue
					}
					f.ranges = append(f.ranges, fetchRange{lo: got.MaxID - got.Size + 1, hi: got.MaxID, node: f.node})
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(began)

	var all []fetchRange
	errs := map[string]int{}
	perNodeOK := map[int]int{}
	var nerr int
	var took time.Duration
	for _, f := range fetchers {
		all = append(all, f.ranges...)
		perNodeOK[f.node] += len(f.ranges)
		took += f.took
		for k, v := range f.errs {
			errs[k] += v
			nerr += v
		}
	}
	slices.SortFunc(all, func(a, b fetchRange) int { return cmp.Compare(a.lo, b.lo) })
	var overlaps int
	var examples []string
	var covered, hi int64
	var hiNode int
	for _, r := range all {
		if r.lo <= hi {
			overlaps++
			if len(examples) < 5 {
				examples = append(examples, fmt.Sprintf("[%d,%d] from node %d overlaps one up to %d from node %d", r.lo, r.hi, r.node, hi, hiNode))
			}
		} else {
			covered += r.hi - r.lo + 1
		}
		if r.hi > hi {
			hi, hiNode = r.hi, r.node
		}
	}
	var maxID int64
	qctx, qcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer qcancel()
	if err := c.nodes[0].admin.QueryRowContext(qctx, "SELECT max_id FROM "+db+".segments WHERE app_tag = ?", tag).Scan(&maxID); err != nil {
		t.Fatalf("read max_id: %v", err)
	}
	n := len(all)
	t.Logf("galera store: %d fetchers (%d per node) for %s: %d ranges fetched (node 1: %d, node 2: %d, node 3: %d; %.0f/s, mean fetch %s), %d fetch errors %v",
		len(fetchers), perNode, elapsed.Round(time.Millisecond), n, perNodeOK[1], perNodeOK[2], perNodeOK[3],
		float64(n)/elapsed.Seconds(), ms(took/time.Duration(max(n+nerr, 1))), nerr, errs)
	t.Logf("galera store: %d overlapping ranges; final max_id %d, %d IDs in non-overlapping ranges, %d reserved but in no range returned",
		overlaps, maxID, covered, maxID-covered)
	if overlaps > 0 {
		t.Errorf("%d of %d fetched ranges overlap another, e.g. %v", overlaps, n, examples)
	}
	if n < minPerRun {
		t.Errorf("only %d successful fetches in %s, want at least %d", n, elapsed.Round(time.Millisecond), minPerRun)
	}
	for node := 1; node <= len(c.nodes); node++ {
		if perNodeOK[node] == 0 {
			t.Errorf("no successful fetch through node %d", node)
		}
	}
	if hi > maxID {
		t.Errorf("a range ends at %d, above the row's max_id %d", hi, maxID)
	}
}

// errorKind names an error for the figures: the MySQL error number, or the
// first words of the message.
func errorKind(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return "mysql " + strconv.Itoa(int(me.Number))
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// TestGaleraThreeInstancesNoDuplicates: three idalloc instances, each on its
// own node of the Galera cluster with docs/operations.md's plain DSN, serve one tag
// of step 10 (segment.max_step 10, so every fetch is 10 IDs and the three
// nodes' fetches collide all the time) to 8 clients each for 15 s. No ID may
// be issued twice, every instance must serve, and each client's IDs must
// strictly increase.
func TestGaleraThreeInstancesNoDuplicates(t *testing.T) {
	c := setupGalera(t)
	const (
		tag         = "g_e2e"
		perInstance = 8
		runFor      = 15 * time.Second
	)
	db := c.newDatabase(t)
	galeraSchema(t, c, db, tag, galeraStep)
	insts := galeraInstances(t, c, db, config(map[string]any{"segment": map[string]any{"max_step": galeraStep}}))
	startTogether(t, insts)

	ctx, cancel := context.WithTimeout(t.Context(), runFor+30*time.Second)
	defer cancel()
	issued := []*atomic.Int64{{}, {}, {}}
	began := time.Now()
	wait := loadTag(ctx, insts, perInstance, tag, issued)
	defer wait()
	select {
	case <-time.After(runFor):
	case <-ctx.Done():
	}
	s := summarize(wait())
	elapsed := time.Since(began)

	n := len(s.ids)
	t.Logf("galera e2e: %d IDs in %s (%.0f IDs/s) from 3 instances on 3 nodes × %d clients (a=%d b=%d c=%d); %d duplicates",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), perInstance, s.perInst["a"], s.perInst["b"], s.perInst["c"], s.dups)
	t.Logf("galera e2e: 503 resp_code 3 answers a=%d b=%d c=%d; transport errors %d; other failures %d; out-of-order IDs per client %d",
		s.unavailable["a"], s.unavailable["b"], s.unavailable["c"], sum(s.transport), s.other, len(s.violations))
	t.Logf("galera e2e: %s; %s; %s", storeFigures(insts[0]), storeFigures(insts[1]), storeFigures(insts[2]))
	if s.dups > 0 {
		t.Errorf("%d duplicate IDs among %d, e.g. %v", s.dups, n, s.dupExamples)
	}
	for _, in := range insts {
		if s.perInst[in.name] == 0 {
			t.Errorf("instance %s (on its own node) served no ID", in.name)
		}
	}
	if len(s.violations) > 0 {
		t.Errorf("IDs not strictly increasing per client: %v", s.violations)
	}
	if s.other > 0 {
		t.Errorf("%d unexpected failures, first: %s", s.other, s.firstOther)
	}
}
