package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// With snowflake.worker_bits 1 the layout is 41 bits of ms | 1 worker bit |
// 21 sequence bits, and the cluster has two worker IDs, 0 and 1.
const (
	flakeWorkerBits = 1
	flakeSeqBits    = 22 - flakeWorkerBits
)

func flakeWorker(id int64) int64 { return id >> flakeSeqBits & (1<<flakeWorkerBits - 1) }

// flakeTime is the time in an ID, by the default snowflake.epoch.
func flakeTime(id int64) time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id>>22) * time.Millisecond)
}

// stopSlack bounds how long after kill(SIGSTOP) returns a process may still
// run: the signal returns before every thread has stopped, so a request
// read in that moment is timestamped, and fenced, before the stop, and its
// answer goes out at the wake.
const stopSlack = 20 * time.Millisecond

// TestSnowflakeLeaseTakeover: instances A and C hold the only two worker IDs
// of a cluster (worker_bits 1, lease_ttl 3s); B waits for one. A is frozen
// with SIGSTOP past its TTL, so B takes A's worker ID over; A is resumed
// while clients have requests queued on it. A must not issue an ID under
// its lapsed lease (it answers 503 resp_code 3, or 409 resp_code 5 while no
// worker ID is free); once C stops gracefully, A takes C's worker ID and
// continues above C's IDs. No ID may occur twice among A's, B's and C's; the
// new holder of a worker ID issues only above the previous holder's IDs.
// It runs once per lease store (lease.driver sql, redis, etcd): the fence,
// not the store, is what keeps a frozen holder from issuing.
func TestSnowflakeLeaseTakeover(t *testing.T) {
	env := setup(t)
	for _, ls := range leaseStores() {
		t.Run(ls.name, func(t *testing.T) {
			lease, cluster := ls.config(t)
			leaseTakeover(t, env, lease, cluster)
		})
	}
}

func leaseTakeover(t *testing.T, env *suiteEnv, lease map[string]any, cluster string) {
	dsn := env.db.newDatabase(t)
	cfg := config(map[string]any{"snowflake": map[string]any{
		"enabled": true, "cluster": cluster, "worker_bits": flakeWorkerBits, "lease_ttl": "3s",
	}, "lease": lease})

	a := startInstance(t, env, "a", dsn, cfg, true)
	wa := waitLease(t, a)
	c := startInstance(t, env, "c", dsn, cfg, false)
	wc := waitLease(t, c)
	if wa == wc {
		t.Fatalf("A and C both hold worker ID %d", wa)
	}
	b := startInstance(t, env, "b", dsn, cfg, false)
	// B answers resp_code 3 (not ready) until its first look at the leases
	// has ended; on a loaded machine that may be after /health is ok.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := b.ctl.get("/snowflake")
		if err == nil && r.HTTPStatus == http.StatusConflict && r.RespCode == 5 {
			break
		}
		if err != nil || r.RespCode != 3 || time.Now().After(deadline) {
			t.Fatalf("B's /snowflake with both worker IDs held: %+v %v, want 409 resp_code 5 (after resp_code 3 at most 10s)", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A new cluster: on Redis and etcd, A's and C's grants have no history
	// (an empty store looks like one that forgot), and such a grant issues
	// no ID until TTL + max_drift_error (3s + 1s) after it (docs/api.md §3); on
	// SQL, tables -init-schema made hold the genesis row and nothing waits.
	waitOpen(t, a, flakeOpenBound)
	waitOpen(t, c, flakeOpenBound)
	aPre := takeFlakes(t, a.ctl, 20, 50)
	cIDs := takeFlakes(t, c.ctl, 10, 50)

	// Six clients hammer A throughout, so requests are queued on A while it
	// is frozen and answered the moment it wakes.
	var (
		mu     sync.Mutex
		calls  []timedCall
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		closed bool
	)
	stopHammer := func() {
		mu.Lock()
		if closed {
			mu.Unlock()
			return
		}
		closed = true
		mu.Unlock()
		close(stop)
		wg.Wait()
	}
	defer stopHammer()
	for range 6 {
		hc := newRawClient(a.addr, 60*time.Second)
		wg.Go(func() {
			defer hc.close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now()
				r, err := hc.get("/snowflake")
				mu.Lock()
				calls = append(calls, timedCall{sent: sent, recv: time.Now(), r: r, err: err})
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)

	// Freeze A past its TTL; B must take A's worker ID.
	if err := a.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozenAt := time.Now()
	var bIDs []int64
	var tookOver time.Duration
	for tookOver == 0 {
		if time.Since(frozenAt) > 20*time.Second {
			t.Fatalf("B issued no snowflake ID within 20s of freezing A (TTL 3s)")
		}
		r, err := b.ctl.get("/snowflake")
		if err == nil && r.RespCode == 0 {
			tookOver = time.Since(frozenAt)
			bIDs = append(bIDs, r.ID)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := waitLease(t, b); w != wa {
		t.Errorf("B took worker ID %d, want A's %d (C holds %d)", w, wa, wc)
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		bIDs = append(bIDs, takeFlakes(t, b.ctl, 1, 100)...)
		time.Sleep(20 * time.Millisecond)
	}
	// The local decomposition agrees with the service's.
	if r, err := b.ctl.get("/snowflake/" + strconv.FormatInt(bIDs[0], 10)); err != nil || r.RespCode != 0 || r.WorkerID != flakeWorker(bIDs[0]) {
		t.Fatalf("decompose %d on B: %+v %v, want worker_id %d", bIDs[0], r, err, flakeWorker(bIDs[0]))
	}

	// Wake A: its queued requests are answered now, under a lapsed lease.
	// thawedAt is read before SIGCONT: A may answer before the call returns.
	thawedAt := time.Now()
	if err := a.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozenFor := thawedAt.Sub(frozenAt)
	var lapsed []int64 // IDs A must not have issued
	afterWake := map[string]int{}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		r, err := a.ctl.get("/snowflake")
		if err != nil {
			t.Fatalf("A after SIGCONT: %v", err)
		}
		afterWake[fmt.Sprintf("HTTP %d resp_code %d", r.HTTPStatus, r.RespCode)]++
		if r.RespCode == 0 {
			t.Errorf("A issued %d (worker %d) after waking, with no worker ID free", r.ID, flakeWorker(r.ID))
			lapsed = append(lapsed, r.ID)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// C stops gracefully and releases its worker ID; A takes it and goes on.
	cStopAt := time.Now()
	if _, err := c.stopGracefully(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	var aPost []int64
	var reacquired time.Duration
	meanwhile := map[string]int{}
	for reacquired == 0 {
		if time.Since(cStopAt) > 20*time.Second {
			t.Fatalf("A issued no ID within 20s of C's release; answers meanwhile: %v", meanwhile)
		}
		r, err := a.ctl.get("/snowflake")
		if err == nil && r.RespCode == 0 {
			reacquired = time.Since(cStopAt)
			aPost = append(aPost, r.ID)
			break
		}
		meanwhile[fmt.Sprintf("HTTP %d resp_code %d", r.HTTPStatus, r.RespCode)]++
		time.Sleep(50 * time.Millisecond)
	}
	if w := waitLease(t, a); w != wc {
		t.Errorf("A re-acquired worker ID %d, want C's released %d", w, wc)
	}
	aPost = append(aPost, takeFlakes(t, a.ctl, 10, 50)...)
	stopHammer()

	// The hammering clients' view of A.
	// A runs only before the freeze and after the wake, and the clients are
	// never frozen: an answer received before the wake (before SIGCONT was
	// sent) was written before the freeze.
	queuedCodes := map[string]int{} // requests held while A was frozen
	wakeCodes := map[string]int{}   // answered after the wake, before C stopped
	var transportErrs, badRetry int
	var heldMax time.Duration
	for _, call := range calls {
		if call.err != nil {
			transportErrs++
			continue
		}
		r := call.r
		code := fmt.Sprintf("HTTP %d resp_code %d", r.HTTPStatus, r.RespCode)
		switch {
		case call.sent.Before(thawedAt) && !call.recv.Before(thawedAt):
			queuedCodes[code]++
			heldMax = max(heldMax, call.recv.Sub(call.sent))
		case !call.recv.Before(thawedAt) && call.recv.Before(cStopAt):
			wakeCodes[code]++
		}
		if r.HTTPStatus == http.StatusServiceUnavailable && r.RetryAfter == "" {
			badRetry++
		}
		if r.RespCode != 0 {
			continue
		}
		w := flakeWorker(r.ID)
		switch {
		case call.recv.Before(thawedAt):
			if w != wa {
				t.Errorf("A issued %d with worker %d before the freeze, holding %d", r.ID, w, wa)
			}
			aPre = append(aPre, r.ID)
		case call.recv.Before(cStopAt) && w == wa && flakeTime(r.ID).Before(frozenAt.Add(stopSlack)):
			// Made before the stop took hold, under the lease as it was.
			t.Logf("A answered %d (worker %d, timestamped %s before the freeze was sent) %s after waking",
				r.ID, w, ms(frozenAt.Sub(flakeTime(r.ID))), ms(call.recv.Sub(thawedAt)))
			aPre = append(aPre, r.ID)
		case call.recv.Before(cStopAt):
			t.Errorf("A issued %d (worker %d) %s after waking (request sent %s after the freeze), before any worker ID was free: an ID under a lapsed lease",
				r.ID, w, ms(call.recv.Sub(thawedAt)), ms(call.sent.Sub(frozenAt)))
			lapsed = append(lapsed, r.ID)
		case w == wa:
			t.Errorf("A issued %d under worker ID %d, which B holds", r.ID, w)
			lapsed = append(lapsed, r.ID)
		default:
			aPost = append(aPost, r.ID)
		}
	}
	if transportErrs > 0 {
		t.Errorf("%d transport errors on the clients of A", transportErrs)
	}
	if badRetry > 0 {
		t.Errorf("%d 503 answers of A without Retry-After", badRetry)
	}

	// The new holder of a worker ID issues above the previous holder.
	maxOf := func(ids []int64, worker int64) int64 {
		var m int64
		for _, id := range ids {
			if flakeWorker(id) == worker {
				m = max(m, id)
			}
		}
		return m
	}
	minOf := func(ids []int64, worker int64) int64 {
		var m int64 = -1
		for _, id := range ids {
			if flakeWorker(id) == worker && (m < 0 || id < m) {
				m = id
			}
		}
		return m
	}
	if mb, ma := minOf(bIDs, wa), maxOf(aPre, wa); mb <= ma {
		t.Errorf("B's first ID under worker %d is %d, not above A's last %d", wa, mb, ma)
	}
	for _, id := range bIDs {
		if flakeWorker(id) != wa {
			t.Errorf("B issued %d under worker %d, holding %d", id, flakeWorker(id), wa)
			break
		}
	}
	if ma, mc := minOf(aPost, wc), maxOf(cIDs, wc); ma <= mc {
		t.Errorf("A's first ID under worker %d is %d, not above C's last %d", wc, ma, mc)
	}
	for _, id := range aPost {
		if flakeWorker(id) != wc {
			t.Errorf("A issued %d under worker %d after re-acquiring %d", id, flakeWorker(id), wc)
			break
		}
	}

	var all []int64
	for _, s := range [][]int64{aPre, cIDs, bIDs, aPost, lapsed} {
		all = append(all, s...)
	}
	n := len(all)
	dups, examples := checkUnique(all)
	t.Logf("snowflake: worker IDs: A %d, C %d, B none (409 resp_code 5); A frozen %s; B took worker %d over %s after the freeze (TTL 3s)",
		wa, wc, ms(frozenFor), wa, ms(tookOver))
	t.Logf("snowflake: A's answers to the %d requests held while it was frozen (up to %s): %v; to the clients until C stopped: %v; to direct probes over 2s after waking: %v",
		sum(queuedCodes), ms(heldMax), queuedCodes, wakeCodes, afterWake)
	t.Logf("snowflake: C stopped gracefully; A issued again %s later (answers meanwhile: %v) under worker %d",
		ms(reacquired), meanwhile, wc)
	t.Logf("snowflake: IDs: A before %d, C %d, B %d, A after %d; %d in all, %d duplicates", len(aPre), len(cIDs), len(bIDs), len(aPost), n, dups)
	if dups > 0 {
		t.Errorf("%d duplicate snowflake IDs, e.g. %v", dups, examples)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// waitLease waits up to 20s for in's own worker lease, its fence open
// (GET /workerid answers resp_code 3 until then: a grant with no history
// waits TTL + max_drift_error), and returns its ID.
func waitLease(t *testing.T, in *instance) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := in.ctl.get("/workerid")
		if err == nil && r.RespCode == 0 {
			return r.WorkerID
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no worker lease within 20s: %+v %v", in.name, r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flakeOpenBound bounds waitOpen in TestSnowflakeLeaseTakeover: lease_ttl
// 3s + max_drift_error 1s (the default), with room for a loaded machine.
const flakeOpenBound = 3*time.Second + time.Second + 10*time.Second

// waitOpen waits up to within for in's own lease to let snowflake IDs
// through: /health carries snowflake_wait_ms until then (a grant the lease
// store has no record of waits TTL + max_drift_error first).
func waitOpen(t *testing.T, in *instance, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := in.ctl.get("/health")
		if err == nil && r.HTTPStatus == http.StatusOK && r.SnowflakeWaitMS == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: snowflake IDs still held after %s of waiting: /health %+v %v", in.name, within, r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// takeFlakes takes calls batches of count snowflake IDs; each call must
// succeed with strictly increasing IDs.
func takeFlakes(t *testing.T, c *client, calls, count int) []int64 {
	t.Helper()
	var ids []int64
	for range calls {
		r, err := c.get("/snowflake?count=" + strconv.Itoa(count))
		if err != nil {
			t.Fatalf("snowflake: %v", err)
		}
		if r.HTTPStatus != http.StatusOK || r.RespCode != 0 || len(r.IDs) != count {
			t.Fatalf("snowflake?count=%d: HTTP %d resp_code %d %q, %d ids", count, r.HTTPStatus, r.RespCode, r.Msg, len(r.IDs))
		}
		for i, id := range r.IDs {
			if i > 0 && id <= r.IDs[i-1] {
				t.Fatalf("snowflake batch not increasing: %d after %d", id, r.IDs[i-1])
			}
		}
		ids = append(ids, r.IDs...)
	}
	return ids
}
