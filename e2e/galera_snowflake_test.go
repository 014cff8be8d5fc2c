package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// The default snowflake layout: 10 worker bits above 12 sequence bits.
func defaultFlakeWorker(id int64) int64 { return id >> 12 & (1<<10 - 1) }

// galeraLeaseBound is how long after /health answers 200 an instance may
// take to answer /snowflake 200. The lease is first tried before the
// instance serves HTTP, and a failed try is repeated after 1 s, so an
// instance whose first try failed answers about 1 s after /health (less the
// 50 ms of /health polling); one whose try succeeded answers within a few
// tens of milliseconds even on a busy 2-core machine. Half a second lies
// well clear of both.
const galeraLeaseBound = 500 * time.Millisecond

// TestGaleraSnowflakeStartsAtOnce: three snowflake instances, one per node
// of the Galera cluster, start at the same moment, in eight rounds (each its
// own snowflake cluster name, so each round's instances race for the same
// free worker IDs). Every instance must get a worker ID distinct from the
// others' and answer /snowflake within galeraLeaseBound of /health: a
// lease claim that lost a certification race is retried at once, not after
// the 1 s retry for store faults. No snowflake ID may occur twice.
func TestGaleraSnowflakeStartsAtOnce(t *testing.T) {
	c := setupGalera(t)
	const (
		rounds = 8
		calls  = 10
		count  = 100
	)
	db := c.newDatabase(t)
	galeraSchema(t, c, db, "g_flake", galeraStep)

	var all []int64
	for round := 1; round <= rounds; round++ {
		cluster := fmt.Sprintf("g%d", round)
		insts := galeraInstances(t, c, db, config(map[string]any{"snowflake": map[string]any{
			"enabled": true, "cluster": cluster,
		}}))
		// Each instance is started, then probed for /snowflake as soon as its
		// own /health answers 200, all at the same moment.
		healthy := make([]time.Duration, len(insts))
		leased := make([]time.Duration, len(insts))
		errs := make([]error, len(insts))
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		var wg sync.WaitGroup
		began := time.Now()
		for i, in := range insts {
			wg.Go(func() {
				if errs[i] = in.start(false); errs[i] != nil {
					return
				}
				healthy[i] = time.Since(began)
				probe := newClient(in.url, time.Second)
				defer probe.close()
				for {
					if r, err := probe.get("/snowflake"); err == nil && r.HTTPStatus == http.StatusOK && r.RespCode == 0 {
						leased[i] = time.Since(began)
						return
					}
					select {
					case <-ctx.Done():
						errs[i] = fmt.Errorf("%s: no /snowflake 200 within 30s of its start", in.name)
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			})
		}
		wg.Wait()
		cancel()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}

		workers := map[int64]string{}
		var figures []string
		for i, in := range insts {
			w := waitLease(t, in)
			if other, dup := workers[w]; dup {
				t.Errorf("round %d: %s and %s both hold worker ID %d", round, other, in.name, w)
			}
			workers[w] = in.name
			after := leased[i] - healthy[i]
			figures = append(figures, fmt.Sprintf("%s worker %d: /health 200 at %s, /snowflake 200 at %s (+%s)",
				in.name, w, ms(healthy[i]), ms(leased[i]), ms(after)))
			if after > galeraLeaseBound {
				t.Errorf("round %d: %s answered /snowflake 200 %s after /health 200, want within %s (a lost lease race waited for the fault retry?)",
					round, in.name, ms(after), galeraLeaseBound)
			}
			ids := takeFlakes(t, in.ctl, calls, count)
			for _, id := range ids {
				if got := defaultFlakeWorker(id); got != w {
					t.Errorf("round %d: %s issued %d with worker %d, holding %d", round, in.name, id, got, w)
					break
				}
			}
			all = append(all, ids...)
		}
		t.Logf("galera snowflake round %d (cluster %q, started together): %v", round, cluster, figures)
		for _, in := range insts {
			if err := in.kill9(); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := len(all)
	dups, examples := checkUnique(all)
	t.Logf("galera snowflake: %d IDs from %d instances in %d rounds; %d duplicates", n, rounds*len(c.nodes), rounds, dups)
	if dups > 0 {
		t.Errorf("%d duplicate snowflake IDs, e.g. %v", dups, examples)
	}
}
