package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestDrainUnderLoad: SIGTERM while keep-alive clients hammer /alloc.
// /health must answer 503 draining at once (within 100ms), /alloc must be
// answered 200 throughout the drain period (shutdown_drain 2s), no client
// may see a connection error before the drain period ends, and the process
// must exit with status 0.
func TestDrainUnderLoad(t *testing.T) {
	env := setup(t)
	const (
		tag        = "e2e_drain"
		drain      = 2 * time.Second
		healthTurn = 100 * time.Millisecond
		// A request sent this close to the end of the drain may meet the
		// closed listener: the client's clock and the server's timer are
		// not the same.
		endMargin = 100 * time.Millisecond
	)
	dsn := env.db.newDatabase(t)
	in := startInstance(t, env, "solo", dsn, config(map[string]any{"shutdown_drain": drain.String()}), true)
	in.createTag(t, tag, 1000)

	// Clients: 4 net/http keep-alive clients and 4 raw HTTP/1.1 keep-alive
	// connections (which retry nothing, so any reset shows).
	type worker struct {
		kind  string
		c     getter
		calls []timedCall
	}
	var workers []*worker
	for i := range 8 {
		w := &worker{kind: "net/http", c: newClient(in.url, 5*time.Second)}
		if i%2 == 1 {
			w.kind, w.c = "raw", newRawClient(in.addr, 5*time.Second)
		}
		workers = append(workers, w)
	}
	health := &worker{kind: "health", c: newClient(in.url, 2*time.Second)}

	var termAt atomic.Int64 // UnixNano of the SIGTERM, 0 before
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// loop runs path until stop, or until the server is gone after the drain.
	loop := func(w *worker, path string, pause time.Duration) {
		defer w.c.close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			sent := time.Now()
			r, err := w.c.get(path)
			recv := time.Now()
			w.calls = append(w.calls, timedCall{sent: sent, recv: recv, r: r, err: err})
			if ta := termAt.Load(); err != nil && ta != 0 && recv.After(time.Unix(0, ta).Add(drain)) {
				return // the server has shut down
			}
			if err != nil {
				pause = max(pause, 10*time.Millisecond)
			}
			if pause > 0 {
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
			}
		}
	}
	for _, w := range workers {
		wg.Go(func() { loop(w, "/alloc?app_tag="+tag, 0) })
	}
	wg.Go(func() { loop(health, "/health", 5*time.Millisecond) })
	stopAll := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopAll()

	// One more keep-alive connection, idle at SIGTERM (as in a proxy's
	// upstream pool) and reused during the drain.
	idle := newRawClient(in.addr, 5*time.Second)
	defer idle.close()
	if r, err := idle.get("/alloc?app_tag=" + tag); err != nil || r.RespCode != 0 {
		t.Fatalf("idle connection's first /alloc: %+v %v", r, err)
	}
	time.Sleep(500 * time.Millisecond)
	pid := in.pid()
	t0 := time.Now()
	termAt.Store(t0.UnixNano())
	if err := in.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	idleSent := time.Since(t0)
	idleReply, idleErr := idle.get("/alloc?app_tag=" + tag)
	st, err := in.wait(drain + 20*time.Second)
	exitAfter := time.Since(t0)
	time.Sleep(100 * time.Millisecond) // let the clients meet the closed port
	stopAll()
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitCode() != 0 {
		t.Errorf("idalloc (pid %d) exited with %v after SIGTERM, want status 0", pid, st)
	}
	if exitAfter < drain {
		t.Errorf("idalloc exited %s after SIGTERM, before the %s drain ended", ms(exitAfter), drain)
	}
	drainEnd := t0.Add(drain)
	idleOutcome := fmt.Sprintf("HTTP %d resp_code %d", idleReply.HTTPStatus, idleReply.RespCode)
	if idleErr != nil {
		idleOutcome = idleErr.Error()
		t.Errorf("a keep-alive connection idle at SIGTERM, reused %s into the %s drain: %v (closed by the server without an answer)", ms(idleSent), drain, idleErr)
	} else if idleReply.HTTPStatus != http.StatusOK || idleReply.RespCode != 0 {
		t.Errorf("a keep-alive connection idle at SIGTERM, reused %s into the drain: %s, want 200", ms(idleSent), idleOutcome)
	}

	// /health.
	var turned time.Duration
	var healthBefore, healthDraining, healthLateOK, healthErrs int
	var lateOK string
	for _, c := range health.calls {
		if c.sent.Before(t0) {
			healthBefore++
			continue
		}
		switch {
		case c.err != nil:
			if c.sent.Before(drainEnd.Add(-endMargin)) {
				healthErrs++
				t.Errorf("/health sent %s after SIGTERM: %v", ms(c.sent.Sub(t0)), c.err)
			}
		case c.r.HTTPStatus == http.StatusServiceUnavailable && c.r.RespCode == 3 && c.r.Status == "draining":
			healthDraining++
			if turned == 0 {
				turned = c.recv.Sub(t0)
			}
			if c.r.RetryAfter == "" {
				t.Errorf("/health 503 draining without Retry-After")
			}
		case c.sent.After(t0.Add(healthTurn)):
			healthLateOK++
			if lateOK == "" {
				lateOK = fmt.Sprintf("HTTP %d status %q resp_code %d, sent %s after SIGTERM", c.r.HTTPStatus, c.r.Status, c.r.RespCode, ms(c.sent.Sub(t0)))
			}
		}
	}
	switch {
	case turned == 0:
		t.Errorf("/health never answered 503 draining after SIGTERM (%d polls)", len(health.calls)-healthBefore)
	case turned > healthTurn:
		t.Errorf("/health answered 503 draining %s after SIGTERM, want within %s", ms(turned), healthTurn)
	}
	if healthLateOK > 0 {
		t.Errorf("%d /health answers other than 503 draining for requests sent more than %s after SIGTERM, first: %s", healthLateOK, healthTurn, lateOK)
	}

	// /alloc.
	var ids []int64
	var refusedAfter, lastOK time.Duration
	kinds := map[string]int{}
	var nBefore, nDuring, nAfterOK, nAfterErr int
	for _, w := range workers {
		last := int64(0)
		for _, c := range w.calls {
			inDrain := !c.sent.Before(t0)
			switch {
			case c.err != nil:
				if c.sent.Before(drainEnd.Add(-endMargin)) {
					kinds[w.kind+" error"]++
					if kinds[w.kind+" error"] <= 3 {
						t.Errorf("%s client: /alloc sent %s after SIGTERM (drain %s): %v", w.kind, ms(c.sent.Sub(t0)), drain, c.err)
					}
				} else {
					nAfterErr++
					refusedAfter = max(refusedAfter, c.sent.Sub(t0))
				}
				continue
			case c.r.HTTPStatus != http.StatusOK || c.r.RespCode != 0:
				kinds[w.kind+" refused"]++
				if kinds[w.kind+" refused"] <= 3 {
					t.Errorf("%s client: /alloc sent %s after SIGTERM: HTTP %d resp_code %d %q, want 200 through the drain",
						w.kind, ms(c.sent.Sub(t0)), c.r.HTTPStatus, c.r.RespCode, c.r.Msg)
				}
				continue
			}
			ids = append(ids, c.r.ID)
			if c.r.ID <= last {
				t.Errorf("%s client: id %d after %d", w.kind, c.r.ID, last)
			}
			last = c.r.ID
			switch {
			case !inDrain:
				nBefore++
			case c.recv.Before(drainEnd):
				nDuring++
				lastOK = max(lastOK, c.recv.Sub(t0))
			default:
				nAfterOK++
				lastOK = max(lastOK, c.recv.Sub(t0))
			}
		}
	}
	if nDuring == 0 {
		t.Errorf("no /alloc answered during the drain")
	}
	if lastOK < drain-endMargin-100*time.Millisecond {
		t.Errorf("last /alloc answered %s after SIGTERM, want served until about %s", ms(lastOK), drain)
	}
	n := len(ids)
	dups, examples := checkUnique(ids)
	t.Logf("drain: SIGTERM under load (%d keep-alive clients: 4 net/http, 4 raw); /health 503 draining after %s (%d polls answered draining, %d before SIGTERM)",
		len(workers), ms(turned), healthDraining, healthBefore)
	t.Logf("drain: /alloc 200s: %d before SIGTERM, %d during the %s drain, %d in flight at its end; last 200 at +%s; connection errors before the drain ended: %d; refused after it (expected): %d, last sent at +%s",
		nBefore, nDuring, drain, nAfterOK, ms(lastOK), kinds["net/http error"]+kinds["raw error"], nAfterErr, ms(refusedAfter))
	t.Logf("drain: a keep-alive connection idle at SIGTERM, reused at +%s: %s", ms(idleSent), idleOutcome)
	t.Logf("drain: exit status %d, %s after SIGTERM; %d IDs, %d duplicates", st.ExitCode(), ms(exitAfter), n, dups)
	if dups > 0 {
		t.Errorf("%d duplicate IDs, e.g. %v", dups, examples)
	}
}
