package e2e

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestScrambledNeverRepeats: a scrambled tag (docs/api.md §7) through the real
// binary on MariaDB, across two graceful restarts and a kill -9: every ID
// has exactly the tag's length and none repeats. Scrambled IDs have no
// order, so this is the whole guarantee.
func TestScrambledNeverRepeats(t *testing.T) {
	env := setup(t)
	const (
		tag    = "e2e_scrambled"
		length = 10
		each   = 250 // beyond the first segment, into the prefetched one
	)
	dsn := env.db.newDatabase(t)
	in := startInstance(t, env, "solo", dsn, config(nil), true)
	r, err := in.ctl.post("/tags", `{"app_tag":"`+tag+`","step":100,"format":"scrambled","length":10}`)
	if err != nil || r.HTTPStatus != http.StatusCreated {
		t.Fatalf("POST /tags scrambled: %+v %v, want 201", r, err)
	}
	c := newClient(in.url, 5*time.Second)
	defer c.close()

	seen := map[int64]string{}
	take := func(round string) {
		t.Helper()
		for range each {
			r, err := c.get("/alloc?app_tag=" + tag)
			if err != nil || r.HTTPStatus != http.StatusOK || r.RespCode != 0 {
				t.Fatalf("%s: alloc: %+v %v", round, r, err)
			}
			if n := len(strconv.FormatInt(r.ID, 10)); n != length {
				t.Fatalf("%s: ID %d has %d digits, want %d", round, r.ID, n, length)
			}
			if prev, dup := seen[r.ID]; dup {
				t.Fatalf("%s: ID %d repeated (first issued in %s)", round, r.ID, prev)
			}
			seen[r.ID] = round
		}
	}
	take("first run")
	for _, round := range []string{"after graceful restart 1", "after graceful restart 2"} {
		if _, err := in.stopGracefully(20 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := in.start(false); err != nil {
			t.Fatal(err)
		}
		take(round)
	}
	if err := in.kill9(); err != nil {
		t.Fatal(err)
	}
	if err := in.start(false); err != nil {
		t.Fatal(err)
	}
	take("after kill -9")
	t.Logf("scrambled: %d IDs of %d digits over two graceful restarts and a kill -9, 0 repeated; max_id %d",
		len(seen), length, env.db.maxID(t, dsn, tag))
}
