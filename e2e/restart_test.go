package e2e

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

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
