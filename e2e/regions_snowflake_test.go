package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// With snowflake.worker_bits 2 there are four snowflake worker IDs: two per
// region when region.count is 2.
const (
	regionFlakeWorkerBits = 2
	regionFlakeSeqBits    = 22 - regionFlakeWorkerBits
)

func regionFlakeWorker(id int64) int64 {
	return id >> regionFlakeSeqBits & (1<<regionFlakeWorkerBits - 1)
}

// TestRegionsSnowflake: worker_bits 2 and two regions, each with its own
// MariaDB as its lease store (lease.driver sql) and two snowflake
// instances. Unsplit, each region's store would grant worker IDs 0 and 1 to
// its two instances, and the two regions would issue the same IDs whenever
// their instances met in one millisecond; split, region 0's instances hold
// 0 and 1 and region 1's 2 and 3. All four take snowflake IDs at once for
// 3 s: no ID may occur twice, each instance's IDs carry one worker ID, its
// region's, and /snowflake/{id} decodes the same worker ID.
func TestRegionsSnowflake(t *testing.T) {
	env, dbs := setupRegions(t)
	const (
		runFor = 3 * time.Second
		count  = 200
	)
	var insts []*instance
	for r, db := range dbs {
		dsn := db.newDatabase(t)
		cfg := regionConfig(2, r, map[string]any{
			"snowflake": map[string]any{"enabled": true, "cluster": "e2e", "worker_bits": regionFlakeWorkerBits, "lease_ttl": "3s"},
			"lease":     map[string]any{"driver": "sql"},
		})
		insts = append(insts,
			startInstance(t, env, fmt.Sprintf("r%da", r), dsn, cfg, true),
			startInstance(t, env, fmt.Sprintf("r%db", r), dsn, cfg, false))
	}
	leased := map[string]int64{}
	for _, in := range insts {
		leased[in.name] = waitLease(t, in)
		// A worker ID its store has no last timestamp for waits TTL +
		// max_drift_error before it issues.
		waitOpen(t, in, flakeOpenBound)
	}

	ids := make([][]int64, len(insts))
	failures := make([]string, len(insts))
	var wg sync.WaitGroup
	deadline := time.Now().Add(runFor)
	for i, in := range insts {
		wg.Go(func() {
			c := newClient(in.url, 10*time.Second)
			defer c.close()
			for time.Now().Before(deadline) {
				r, err := c.get("/snowflake?count=" + strconv.Itoa(count))
				if err != nil || r.HTTPStatus != http.StatusOK || r.RespCode != 0 || len(r.IDs) != count {
					failures[i] = fmt.Sprintf("%s: /snowflake?count=%d: HTTP %d resp_code %d %q, %d ids, %v", in.name, count, r.HTTPStatus, r.RespCode, r.Msg, len(r.IDs), err)
					return
				}
				ids[i] = append(ids[i], r.IDs...)
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		if f != "" {
			t.Error(f)
		}
	}

	var workers [2][]int64
	var figures []string
	for i, in := range insts {
		r := regionOf(in)
		seen := map[int64]int{}
		for _, id := range ids[i] {
			seen[regionFlakeWorker(id)]++
		}
		got := slices.Sorted(maps.Keys(seen))
		figures = append(figures, fmt.Sprintf("%s: %d IDs, lease worker_id %d, snowflake worker IDs %v", in.name, len(ids[i]), leased[in.name], got))
		if len(got) != 1 {
			t.Errorf("%s: its IDs carry worker IDs %v, want one", in.name, got)
			continue
		}
		w := got[0]
		if lo := int64(r) * 2; w < lo || w > lo+1 {
			t.Errorf("%s: region %d's instance issued with worker ID %d, want %d or %d", in.name, r, w, lo, lo+1)
		}
		workers[r] = append(workers[r], w)
		d, err := in.ctl.get("/snowflake/" + strconv.FormatInt(ids[i][0], 10))
		if err != nil || d.RespCode != 0 || d.WorkerID != w {
			t.Errorf("%s: /snowflake/%d decodes worker_id %d (%+v, %v), want %d", in.name, ids[i][0], d.WorkerID, d, err, w)
		}
	}
	all := slices.Concat(ids...)
	n := len(all)
	dups, examples := checkUnique(all)
	t.Logf("regions snowflake (worker_bits %d, 2 regions × 2 instances, %s): %v; %d IDs, %d duplicates",
		regionFlakeWorkerBits, runFor, figures, n, dups)
	if dups > 0 {
		t.Errorf("%d duplicate snowflake IDs across the regions, e.g. %v", dups, examples)
	}
	for _, w := range workers[0] {
		if slices.Contains(workers[1], w) {
			t.Errorf("worker ID %d used in both regions (region 0 %v, region 1 %v)", w, workers[0], workers[1])
		}
	}
	for r, ws := range workers {
		if len(ws) == 2 && ws[0] == ws[1] {
			t.Errorf("region %d's two instances both issued with worker ID %d", r, ws[0])
		}
	}
}
