package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// regions holds the second private MariaDB server of the region tests,
// started on first use and stopped by TestMain. Region 0 uses the suite's
// server and region 1 this one: two servers, not two databases on one, so
// that freezing one region's database leaves the other's alone, as it is
// between sites.
var regions struct {
	once sync.Once
	db   *mariaDB
	err  error
}

// setupRegions returns the suite and the two regions' servers, starting the
// second on first use. It skips t as setup does.
func setupRegions(t *testing.T) (*suiteEnv, [2]*mariaDB) {
	t.Helper()
	env := setup(t)
	regions.once.Do(func() {
		regions.db, regions.err = startMariaDB(filepath.Join(env.dir, "mariadb-region1"), env.mariadbd, env.installDB)
	})
	if regions.err != nil {
		t.Fatalf("region 1's MariaDB server: %v", regions.err)
	}
	return env, [2]*mariaDB{env.db, regions.db}
}

// closeRegions stops the second server if a test started it (TestMain).
func closeRegions() {
	if regions.db != nil {
		regions.db.stop()
	}
}

// regionConfig is config(over) with region.count count and region.id id.
func regionConfig(count, id int, over map[string]any) map[string]any {
	c := config(over)
	c["region"] = map[string]any{"count": count, "id": id}
	return c
}

// regionTag is one tag of TestRegionsUnderLoad, created alike in both
// regions.
type regionTag struct {
	name   string
	body   string // POST /tags
	first  [2]int64
	digits int // every ID's length; 0 for any
}

// TestRegionsUnderLoad: two regions (region.count 2), each its own private
// MariaDB server and two instances; the same three tags created in both
// (two sequential, one with a start, and one fixed_length), step 500 and
// segment.max_step 500, so a region cut off from its database runs dry
// within a second. Every instance serves single IDs and batches of 20 of
// each tag for 30 s, and region 1's server is frozen with SIGSTOP for the
// middle 10 s. Every ID is kept and checked: no ID of a tag occurs twice
// across the four instances; each client's IDs strictly increase; every ID
// of region r is ≡ r (mod 2) and the lowest is the first such ID at or
// above the tag's start; region 0's callers get no error and, while region
// 1 is frozen, at least half the IDs per second they got before; region 1
// answers resp_code 3 while frozen and serves again after SIGCONT; and the
// two regions' IDs of each tag interleave (their ranges overlap).
func TestRegionsUnderLoad(t *testing.T) {
	env, dbs := setupRegions(t)
	const (
		step   = 500
		batch  = 20
		phase  = 10 * time.Second // before, during and after the freeze
		regain = 30 * time.Second // bound on region 1's recovery after SIGCONT
	)
	tags := []regionTag{
		{name: "r_orders", body: fmt.Sprintf(`{"app_tag":"r_orders","step":%d}`, step), first: [2]int64{2, 1}},
		{name: "r_users", body: fmt.Sprintf(`{"app_tag":"r_users","step":%d,"start":1001}`, step), first: [2]int64{1002, 1001}},
		{name: "r_codes", body: fmt.Sprintf(`{"app_tag":"r_codes","step":%d,"format":"fixed_length","length":10}`, step),
			first: [2]int64{1_000_000_000, 1_000_000_001}, digits: 10},
	}
	var insts []*instance
	var dsns [2]string
	for r, db := range dbs {
		dsns[r] = db.newDatabase(t)
		cfg := regionConfig(2, r, map[string]any{"segment": map[string]any{"max_step": step}})
		a := startInstance(t, env, fmt.Sprintf("r%da", r), dsns[r], cfg, true)
		for _, tg := range tags {
			a.postTag(t, tg.body)
		}
		// b starts after the tags exist, so it serves them from its start.
		b := startInstance(t, env, fmt.Sprintf("r%db", r), dsns[r], cfg, false)
		insts = append(insts, a, b)
	}
	var paths []string
	for _, tg := range tags {
		paths = append(paths, "/alloc?app_tag="+tg.name, "/alloc?app_tag="+tg.name+"&count="+strconv.Itoa(batch))
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*phase+regain+30*time.Second)
	defer cancel()
	issued := []*atomic.Int64{{}, {}, {}, {}}
	region := func(c []int64, r int) int64 { return c[2*r] + c[2*r+1] }
	began := time.Now()
	wait := startLoad(ctx, insts, paths, issued)
	defer wait()
	sleep := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}

	sleep(phase)
	atFreeze, frozeAt := counts(issued), time.Now()
	dbs[1].freeze(t)
	sleep(phase)
	atThaw, thawedAt := counts(issued), time.Now()
	dbs[1].thaw(t)
	waitFor(ctx, func() bool {
		now := counts(issued)
		return now[2] > atThaw[2] && now[3] > atThaw[3] || time.Since(thawedAt) > regain
	})
	regained := time.Since(thawedAt)
	if left := phase - regained; left > 0 {
		sleep(left)
	}
	atEnd := counts(issued)
	workers := wait()
	elapsed := time.Since(began)

	before := float64(region(atFreeze, 0)) / frozeAt.Sub(began).Seconds()
	during := float64(region(atThaw, 0)-region(atFreeze, 0)) / thawedAt.Sub(frozeAt).Seconds()
	t.Logf("regions: %d IDs in %s from 4 instances (r0a=%d r0b=%d r1a=%d r1b=%d), %d clients each (3 tags × single and count=%d)",
		sum64(atEnd), elapsed.Round(time.Millisecond), atEnd[0], atEnd[1], atEnd[2], atEnd[3], len(paths), batch)
	t.Logf("regions: region 0 took %.0f IDs/s before the freeze and %.0f IDs/s while region 1's database was frozen (%s); region 1 took %d IDs while frozen (its buffers), and its first IDs after SIGCONT came within %s",
		before, during, ms(thawedAt.Sub(frozeAt)), region(atThaw, 1)-region(atFreeze, 1), ms(regained))
	if during < before/2 {
		t.Errorf("region 0 took %.0f IDs/s while region 1 was frozen, under half its %.0f IDs/s before", during, before)
	}
	if atEnd[2] == atThaw[2] || atEnd[3] == atThaw[3] {
		t.Errorf("region 1 did not serve again within %s of SIGCONT (r1a %d → %d, r1b %d → %d IDs)", regain, atThaw[2], atEnd[2], atThaw[3], atEnd[3])
	}
	checkRegionCallers(t, workers)
	for _, tg := range tags {
		checkRegionTag(t, tg, workers, dbs, dsns)
	}
}

// checkRegionCallers fails t unless region 0's clients saw no failure at all
// and region 1's none but resp_code 3 (it ran dry while frozen, which it
// must have done: otherwise the freeze proved nothing).
func checkRegionCallers(t *testing.T, workers []*loadWorker) {
	t.Helper()
	var failures [2]struct{ unavailable, transport, other int }
	var violations []string
	firstOther := ""
	for _, w := range workers {
		f := &failures[regionOf(w.inst)]
		f.unavailable += w.unavailable
		f.transport += w.transportErrs
		f.other += w.other
		if firstOther == "" {
			firstOther = w.firstOther
		}
		violations = append(violations, w.violations...)
	}
	t.Logf("regions: callers' failures: region 0 %+v, region 1 %+v; IDs out of order per client: %d", failures[0], failures[1], len(violations))
	if f := failures[0]; f.unavailable+f.transport+f.other > 0 {
		t.Errorf("region 0's callers were affected by region 1's freeze: %d resp_code 3, %d transport errors, %d other failures (first: %s)",
			f.unavailable, f.transport, f.other, firstOther)
	}
	if f := failures[1]; f.transport+f.other > 0 {
		t.Errorf("region 1's callers got %d transport errors and %d failures other than resp_code 3 (first: %s)", f.transport, f.other, firstOther)
	}
	if failures[1].unavailable == 0 {
		t.Errorf("region 1 never answered resp_code 3 with its database frozen for 10 s: it did not run dry, so the test proved nothing about a cut-off region")
	}
	if len(violations) > 0 {
		t.Errorf("IDs not strictly increasing per client: %v", violations)
	}
}

// regionOf reads an instance's region from its name (r0a … r1b).
func regionOf(in *instance) int { return int(in.name[1] - '0') }

// checkRegionTag checks one tag's IDs from all four instances: none twice,
// each region's ≡ r (mod 2), of the tag's length, the lowest the first of
// its region, none above its region's max_id, and the regions' ranges
// overlapping.
func checkRegionTag(t *testing.T, tg regionTag, workers []*loadWorker, dbs [2]*mariaDB, dsns [2]string) {
	t.Helper()
	var ids [2][]int64
	for _, w := range workers {
		if tagOf(w.path) == tg.name {
			r := regionOf(w.inst)
			ids[r] = append(ids[r], w.ids...)
		}
	}
	var rg [2]idRange
	for r := range ids {
		var wrong []int64
		for _, id := range ids[r] {
			rg[r].add(id)
			if id%2 != int64(r) || tg.digits > 0 && len(strconv.FormatInt(id, 10)) != tg.digits {
				wrong = append(wrong, id)
			}
		}
		if len(wrong) > 0 {
			t.Errorf("%s: %d of region %d's %d IDs are not ≡ %d (mod 2)%s, e.g. %v", tg.name, len(wrong), r, len(ids[r]), r, digitsWant(tg.digits), wrong[:min(5, len(wrong))])
		}
		if rg[r].n == 0 {
			t.Errorf("%s: region %d issued no ID", tg.name, r)
			continue
		}
		if rg[r].min != tg.first[r] {
			t.Errorf("%s: region %d's lowest ID is %d, want %d (the first ≡ %d at or above the tag's start)", tg.name, r, rg[r].min, tg.first[r], r)
		}
		if maxID := dbs[r].maxID(t, dsns[r], tg.name); rg[r].max > maxID {
			t.Errorf("%s: region %d issued %d, above its database's max_id %d", tg.name, r, rg[r].max, maxID)
		}
	}
	all := slices.Concat(ids[0], ids[1])
	n := len(all)
	dups, examples := checkUnique(all)
	lo, hi := max(rg[0].min, rg[1].min), min(rg[0].max, rg[1].max)
	within := 0
	for _, id := range ids[1] {
		if id >= rg[0].min && id <= rg[0].max {
			within++
		}
	}
	t.Logf("regions: %s: %d IDs, %d duplicates; region 0 [%d, %d] (%d IDs), region 1 [%d, %d] (%d IDs, %d of them inside region 0's range)",
		tg.name, n, dups, rg[0].min, rg[0].max, rg[0].n, rg[1].min, rg[1].max, rg[1].n, within)
	if dups > 0 {
		t.Errorf("%s: %d duplicate IDs among %d across the two regions, e.g. %v", tg.name, dups, n, examples)
	}
	if lo >= hi {
		t.Errorf("%s: the regions' IDs do not interleave: region 0 [%d, %d], region 1 [%d, %d]", tg.name, rg[0].min, rg[0].max, rg[1].min, rg[1].max)
	}
}

// tagOf is the app_tag of a load path.
func tagOf(path string) string {
	const prefix = "/alloc?app_tag="
	tag := path[len(prefix):]
	if i := strings.IndexByte(tag, '&'); i >= 0 {
		tag = tag[:i]
	}
	return tag
}

func digitsWant(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" of %d digits", n)
}

func sum64(s []int64) int64 {
	var n int64
	for _, v := range s {
		n += v
	}
	return n
}
