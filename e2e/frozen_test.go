package e2e

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

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
