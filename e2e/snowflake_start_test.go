package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Bounds of TestSnowflakeStartAnswers: how long the test holds the lease
// table locked once the instance serves, and its lease's TTL and
// max_drift_error (the wait of a grant with no history is their sum).
const (
	startLockFor = 3 * time.Second
	startTTL     = 3 * time.Second
	startDrift   = time.Second
)

// TestSnowflakeStartAnswers starts idalloc with snowflake on (8 worker IDs,
// all free) and polls /health, GET /workerid, /snowflake and RESP's
// SNOWFLAKE from the moment it listens until its lease's fence is open
// (docs/api.md §2, Health): never resp_code 5 while IDs are free; /health 200
// "ok" carrying snowflake_wait_ms and why until the fence opens, and not
// after; /snowflake and /workerid resp_code 3 with Retry-After meanwhile
// (RESP: TRYAGAIN). Its first look at the leases is held back by a lock on
// worker_leases (a slow or loaded store), and the table has no genesis row
// (as one made by hand, or with rows deleted), so its grant has no history
// and waits TTL + max_drift_error: /health and /snowflake's refusal say so,
// with Retry-After.
func TestSnowflakeStartAnswers(t *testing.T) {
	env := setup(t)
	dsn := env.db.newDatabase(t)
	db := dsn[strings.LastIndexByte(dsn, '/')+1:]
	// The tables, made as an operator makes them (-init-schema), by an
	// instance without snowflake that leased nothing.
	initInst := startInstance(t, env, "init", dsn, config(nil), true)
	if _, err := initInst.stopGracefully(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := env.db.admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"LOCK TABLES " + db + ".worker_leases WRITE", "DELETE FROM " + db + ".worker_leases"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			if _, err := conn.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
				t.Errorf("UNLOCK TABLES: %v", err)
			}
		}
	}
	defer unlock()

	respAddr := loopbackAddr(t)
	in := newInstance(t, env, "a", dsn, config(map[string]any{
		"resp_addr": respAddr,
		"snowflake": map[string]any{"enabled": true, "cluster": "e2e", "worker_bits": 3,
			"lease_ttl": startTTL.String(), "max_drift_error": startDrift.String()},
	}))
	spawned := time.Now()
	proc, err := in.spawn(false, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(in.url, 5*time.Second)
	defer c.close()

	var (
		serving, unlockedAt, opened time.Time
		answers                     = map[string]int{} // what each route answered, counted
		sawNoHistory                bool               // on /health and in /snowflake's refusal
		sawRefusalWhy               bool
	)
	told := map[string]bool{}
	bad := func(format string, args ...any) { // once per kind of failure
		t.Helper()
		if !told[format] {
			told[format] = true
			t.Errorf(format, args...)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); opened.IsZero(); {
		select {
		case <-proc.done:
			t.Fatalf("idalloc exited: %v", proc.state)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease's fence not open within 60s; answers: %v", answers)
		}
		if locked && !serving.IsZero() && time.Since(serving) > startLockFor {
			unlockedAt = time.Now()
			unlock()
		}
		h, err := c.get("/health")
		if err != nil {
			if !serving.IsZero() {
				t.Fatalf("/health after the first answer: %v", err)
			}
			time.Sleep(5 * time.Millisecond)
			continue // not listening yet
		}
		if serving.IsZero() {
			serving = time.Now()
		}
		answers[fmt.Sprintf("/health %d %q", h.HTTPStatus, h.Snowflake)]++
		if h.HTTPStatus != http.StatusOK || h.Status != "ok" {
			bad("/health: %+v, want 200 ok (segments are served)", h)
		}
		// Read before the ID calls: a wait that ends between them shows
		// here, never the other way round.
		waiting := h.SnowflakeWaitMS > 0
		if waiting != (h.Snowflake != "") {
			bad("/health: %+v: snowflake_wait_ms and the reason come together", h)
		}
		sawNoHistory = sawNoHistory || strings.Contains(h.Snowflake, "forgotten")

		for _, path := range []string{"/snowflake", "/workerid"} {
			r, err := c.get(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			answers[fmt.Sprintf("%s %d resp_code %d", path, r.HTTPStatus, r.RespCode)]++
			switch {
			case r.RespCode == 0 && locked:
				bad("%s answered %+v while the lease table is locked", path, r)
			case r.RespCode == 0:
				if path == "/snowflake" {
					opened = time.Now()
				}
			case r.RespCode == 5:
				bad("%s: %+v: resp_code 5 (no worker ID) while 8 of 8 are free", path, r)
			case r.HTTPStatus != http.StatusServiceUnavailable || r.RespCode != 3 || r.Kind != "unavailable" || r.RetryAfter == "":
				bad("%s: %+v, want 503 resp_code 3 kind unavailable with Retry-After", path, r)
			case !waiting:
				bad("%s: %+v, though /health showed no wait just before", path, r)
			case path == "/snowflake" && strings.Contains(r.Msg, "forgotten"):
				sawRefusalWhy = true
				if s, err := strconv.Atoi(r.RetryAfter); err != nil || s < 1 || s > int((startTTL+startDrift)/time.Second) {
					bad("/snowflake during the no-history wait: Retry-After %q, want 1 to %d", r.RetryAfter, (startTTL+startDrift)/time.Second)
				}
			}
		}
		switch line, err := respCommand(respAddr, "SNOWFLAKE\r\n"); {
		case err != nil || !(strings.HasPrefix(line, "-TRYAGAIN ") || strings.HasPrefix(line, "$")):
			bad("RESP SNOWFLAKE: %q %v, want TRYAGAIN while waiting, or an ID", line, err)
		case locked && strings.HasPrefix(line, "$"):
			bad("RESP SNOWFLAKE answered an ID while the lease table is locked")
		default:
			answers["RESP "+strings.Fields(line)[0]]++
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("served %s after the start; table unlocked %s after that; first snowflake ID %s after the unlock; answers: %v",
		ms(serving.Sub(spawned)), ms(unlockedAt.Sub(serving)), ms(opened.Sub(unlockedAt)), answers)
	if !sawNoHistory || !sawRefusalWhy {
		t.Errorf("the no-history wait: on /health %v, in /snowflake's refusal %v; want both", sawNoHistory, sawRefusalWhy)
	}
	// The grant was asked for after the unlock, and it has no history.
	if took := opened.Sub(unlockedAt); took < startTTL+startDrift {
		t.Errorf("first snowflake ID %s after the unlock, before TTL + max_drift_error (%s)", ms(took), startTTL+startDrift)
	}
	// Open now, and it stays so.
	for range 10 {
		h, err := c.get("/health")
		if err != nil || h.SnowflakeWaitMS != 0 || h.Snowflake != "" {
			t.Errorf("/health after the fence opened: %+v %v, want no snowflake_wait_ms", h, err)
		}
		if r, err := c.get("/workerid"); err != nil || r.HTTPStatus != http.StatusOK || r.RespCode != 0 {
			t.Errorf("/workerid after the fence opened: %+v %v, want 200", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
