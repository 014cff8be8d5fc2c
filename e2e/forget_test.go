package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/etcdtest"
	"github.com/idalloc/idalloc/internal/redistest"
)

// A store that forgets (docs/api.md §3, §5 guarantee 7): instance A holds worker
// ID 0 of a two-worker cluster and issues snowflake IDs under load; the lease
// store loses every record; instance B starts at once and is granted a
// worker ID the store knows nothing of, possibly A's. Without the wait after
// such a grant, B would issue under worker 0 while A, not yet told, still
// does: the same milliseconds, the same sequences, the same IDs.
const (
	forgetTTL     = 3 * time.Second
	forgetDrift   = time.Second // snowflake.max_drift_error, the default
	forgetLoad    = 10 * time.Second
	forgetClients = 3 // per instance
	forgetBatch   = 1000
)

// TestStoreForgetsRedisFlushAll: FLUSHALL on a private Redis.
func TestStoreForgetsRedisFlushAll(t *testing.T) {
	env := setup(t)
	rs := redistest.Start(t)
	storeForgets(t, env, redisLease(rs), func(t *testing.T, _ string) { rs.FlushAll(t) })
}

// TestStoreForgetsRedisRestarted: a private Redis without persistence is
// killed and started again on the same port, empty.
func TestStoreForgetsRedisRestarted(t *testing.T) {
	env := setup(t)
	rs := redistest.Start(t)
	storeForgets(t, env, redisLease(rs), func(t *testing.T, _ string) { rs.Restart(t) })
}

// TestStoreForgetsRedisClusterFlushAll: FLUSHALL on every node of a
// private three-node Redis Cluster.
func TestStoreForgetsRedisClusterFlushAll(t *testing.T) {
	env := setup(t)
	rc := redistest.StartCluster(t)
	storeForgets(t, env, redisClusterLease(rc), func(t *testing.T, _ string) { rc.FlushAll(t) })
}

// TestStoreForgetsRedisClusterRestarted: every node of a private Redis
// Cluster without persistence is killed and started again on its ports,
// empty, its slots where they were.
func TestStoreForgetsRedisClusterRestarted(t *testing.T) {
	env := setup(t)
	rc := redistest.StartCluster(t)
	storeForgets(t, env, redisClusterLease(rc), func(t *testing.T, _ string) { rc.Restart(t) })
}

// TestStoreForgetsEtcdWiped: a private etcd is killed, its data directory
// deleted, and started again on the same ports.
func TestStoreForgetsEtcdWiped(t *testing.T) {
	env := setup(t)
	srv := etcdtest.Start(t)
	storeForgets(t, env, map[string]any{"driver": "etcd", "dsn": srv.DSN()}, func(t *testing.T, _ string) { srv.Wipe(t) })
}

// TestStoreForgetsSQLRowsDeleted: every row of worker_leases is deleted from
// the instances' MariaDB database.
func TestStoreForgetsSQLRowsDeleted(t *testing.T) {
	env := setup(t)
	storeForgets(t, env, map[string]any{"driver": "sql"}, func(t *testing.T, dsn string) {
		name := dsn[strings.LastIndexByte(dsn, '/')+1:]
		if _, err := env.db.admin.ExecContext(t.Context(), "DELETE FROM "+name+".worker_leases"); err != nil {
			t.Fatalf("DELETE FROM worker_leases: %v", err)
		}
	})
}

func redisLease(rs *redistest.Server) map[string]any {
	return map[string]any{"driver": "redis", "dsn": "redis://" + rs.Addr() + "/0"}
}

func redisClusterLease(rc *redistest.Cluster) map[string]any {
	return map[string]any{"driver": "redis", "dsn": rc.DSN()}
}

// storeForgets runs the scenario on lease store lease; forget makes the store
// forget (dsn names the instances' database). Both instances are hammered
// with batches of forgetBatch IDs, A from half a second before the
// forgetting, B from its start, until forgetLoad after B's start. No ID may
// occur twice, nor may A's and B's IDs under one worker ID interleave (one
// holder after the other), B must issue within forgetLoad, and not
// before TTL + max_drift_error after its start: it asked for its lease after
// the forgetting, so its grant has no history. The figures are logged: when
// A stopped and resumed, under which worker IDs, how many IDs each issued.
func storeForgets(t *testing.T, env *suiteEnv, lease map[string]any, forget func(t *testing.T, dsn string)) {
	dsn := env.db.newDatabase(t)
	cfg := config(map[string]any{"snowflake": map[string]any{
		"enabled": true, "cluster": "e2e", "worker_bits": flakeWorkerBits,
		"lease_ttl": forgetTTL.String(), "max_drift_error": forgetDrift.String(),
	}, "lease": lease})

	aStart := time.Now()
	a := startInstance(t, env, "a", dsn, cfg, true)
	aFirst := waitFlake(t, a, 20*time.Second)
	wa := waitLease(t, a)
	t.Logf("A holds worker %d and issued its first ID %s after its start", wa, ms(aFirst.Sub(aStart)))

	load := newFlakeLoad()
	defer load.stop()
	load.hammer(a)
	time.Sleep(500 * time.Millisecond) // A issues under load when the store forgets

	forget(t, dsn)
	forgotAt := time.Now()
	b := newInstance(t, env, "b", dsn, cfg)
	bStart := time.Now()
	if err := b.start(false); err != nil {
		t.Fatal(err)
	}
	bUp := time.Since(bStart)
	load.hammer(b)
	var bWait int64
	if h, err := b.ctl.get("/health"); err == nil {
		bWait = h.SnowflakeWaitMS
	}
	// A finds its record gone at its next renewal (every TTL/3) and waits
	// out its next grant; /health shows that wait.
	var aWait int64
	for aWait == 0 && time.Since(forgotAt) < 2*forgetTTL {
		if h, err := a.ctl.get("/health"); err == nil {
			aWait = h.SnowflakeWaitMS
		}
		time.Sleep(50 * time.Millisecond)
	}
	aWaitAt := time.Since(forgotAt)
	time.Sleep(time.Until(bStart.Add(forgetLoad)))
	load.stop()

	bFirst := load.first("b")
	bTook := "never"
	if !bFirst.IsZero() {
		bTook = ms(bFirst.Sub(bStart))
	}
	if bFirst.IsZero() {
		t.Errorf("B issued no ID within %s of its start (wait: TTL %s + max_drift_error %s)", forgetLoad, forgetTTL, forgetDrift)
	} else if took := bFirst.Sub(bStart); took < forgetTTL+forgetDrift {
		// B asked for its lease after its start, so its first ID can come
		// no sooner than one TTL and max_drift_error later.
		t.Errorf("B issued its first ID %s after its start, before TTL + max_drift_error (%s)", ms(took), forgetTTL+forgetDrift)
	}
	wb := waitLease(t, b)
	waNow := waitLease(t, a)

	all, perWorker := load.ids()
	n := len(all)
	dups, examples := checkUnique(all)
	t.Logf("store forgot; B started %s later, served /health %s after its start (snowflake_wait_ms %d) and issued its first ID %s after its start, under worker %d",
		ms(bStart.Sub(forgotAt)), ms(bUp), bWait, bTook, wb)
	t.Logf("A: %s; now holds worker %d (/health snowflake_wait_ms %d at %s)", load.story("a", forgotAt), waNow, aWait, ms(aWaitAt))
	t.Logf("IDs: A %d %v, B %d %v (per worker ID); answers: A %v, B %v; %d in all, %d duplicates",
		load.count("a"), perWorker["a"], load.count("b"), perWorker["b"], load.answers("a"), load.answers("b"), n, dups)
	if dups > 0 {
		t.Errorf("%d duplicate snowflake IDs, e.g. %v", dups, examples)
		for _, id := range examples {
			t.Logf("duplicate %d: %s", id, load.where(b, id, forgotAt))
		}
	}
	// IDs of one worker ID grow with time: one holder's span of them lies
	// wholly below the next one's, or the two issued at the same time.
	spans := load.spans()
	for w, sa := range spans["a"] {
		if sb, ok := spans["b"][w]; ok {
			t.Logf("worker %d: A issued %d..%d, B %d..%d", w, sa[0], sa[1], sb[0], sb[1])
			if sa[1] >= sb[0] && sb[1] >= sa[0] {
				t.Errorf("A's and B's IDs under worker %d interleave: A %d..%d, B %d..%d", w, sa[0], sa[1], sb[0], sb[1])
			}
		}
	}
	if errs := load.transportErrs(); errs > 0 {
		t.Errorf("%d transport errors on the load clients, the first: %v", errs, load.firstErr)
	}
}

// waitFlake waits up to bound for in to issue a snowflake ID and returns when
// it did.
func waitFlake(t *testing.T, in *instance, bound time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		r, err := in.ctl.get("/snowflake")
		if err == nil && r.HTTPStatus == http.StatusOK && r.RespCode == 0 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no snowflake ID within %s: %+v %v", in.name, bound, r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flakeLoad is forgetClients clients per instance, each asking for
// forgetBatch snowflake IDs at a time, one request after the other, until
// stop; it keeps every answer.
type flakeLoad struct {
	stopOnce sync.Once
	stopC    chan struct{}
	wg       sync.WaitGroup

	mu       sync.Mutex
	calls    []flakeCall
	errs     int
	firstErr error
}

// flakeCall is one answer: who gave it, when it arrived, what it was.
type flakeCall struct {
	inst   string
	recv   time.Time
	status string // "HTTP 200 resp_code 0"
	ids    []int64
}

func newFlakeLoad() *flakeLoad { return &flakeLoad{stopC: make(chan struct{})} }

// hammer starts the clients of in.
func (l *flakeLoad) hammer(in *instance) {
	stopC := l.stopC
	path := "/snowflake?count=" + strconv.Itoa(forgetBatch)
	for range forgetClients {
		// net/http's client: answers of many IDs come chunked, which
		// rawClient does not read.
		c := newClient(in.url, 10*time.Second)
		l.wg.Go(func() {
			defer c.close()
			for {
				select {
				case <-stopC:
					return
				default:
				}
				r, err := c.get(path)
				call := flakeCall{inst: in.name, recv: time.Now(), status: fmt.Sprintf("HTTP %d resp_code %d", r.HTTPStatus, r.RespCode)}
				ok := err == nil && r.HTTPStatus == http.StatusOK && r.RespCode == 0
				if ok {
					call.ids = r.IDs
				}
				l.mu.Lock()
				if err != nil {
					l.errs++
					if l.firstErr == nil {
						l.firstErr = err
					}
				} else {
					l.calls = append(l.calls, call)
				}
				l.mu.Unlock()
				if !ok {
					// A refusal is quick; do not spin on it.
					select {
					case <-stopC:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
}

// stop stops every client and waits for them; stopping twice does nothing.
func (l *flakeLoad) stop() {
	l.stopOnce.Do(func() {
		close(l.stopC)
		l.wg.Wait()
	})
}

// The accessors below read the answers after stop.

func (l *flakeLoad) transportErrs() int { return l.errs }

// first returns when inst first issued IDs, zero if never.
func (l *flakeLoad) first(inst string) time.Time {
	var t time.Time
	for _, c := range l.calls {
		if c.inst == inst && len(c.ids) > 0 && (t.IsZero() || c.recv.Before(t)) {
			t = c.recv
		}
	}
	return t
}

func (l *flakeLoad) count(inst string) int {
	n := 0
	for _, c := range l.calls {
		if c.inst == inst {
			n += len(c.ids)
		}
	}
	return n
}

func (l *flakeLoad) answers(inst string) map[string]int {
	m := map[string]int{}
	for _, c := range l.calls {
		if c.inst == inst {
			m[c.status]++
		}
	}
	return m
}

// ids returns every ID issued and, per instance, how many under each worker
// ID.
func (l *flakeLoad) ids() ([]int64, map[string]map[int64]int) {
	var all []int64
	per := map[string]map[int64]int{}
	for _, c := range l.calls {
		if per[c.inst] == nil {
			per[c.inst] = map[int64]int{}
		}
		for _, id := range c.ids {
			per[c.inst][flakeWorker(id)]++
		}
		all = append(all, c.ids...)
	}
	return all, per
}

// spans returns, per instance and worker ID, the least and the greatest ID
// issued.
func (l *flakeLoad) spans() map[string]map[int64][2]int64 {
	m := map[string]map[int64][2]int64{}
	for _, c := range l.calls {
		if m[c.inst] == nil {
			m[c.inst] = map[int64][2]int64{}
		}
		for _, id := range c.ids {
			w := flakeWorker(id)
			sp, ok := m[c.inst][w]
			if !ok {
				sp = [2]int64{id, id}
			}
			m[c.inst][w] = [2]int64{min(sp[0], id), max(sp[1], id)}
		}
	}
	return m
}

// story tells what inst's clients saw around the forgetting: the longest
// stretch without IDs that ended after it (the lease lost, the wait of the
// next one), with the worker IDs before and after and the refusals in it.
func (l *flakeLoad) story(inst string, forgotAt time.Time) string {
	calls := slices.DeleteFunc(slices.Clone(l.calls), func(c flakeCall) bool { return c.inst != inst })
	slices.SortFunc(calls, func(x, y flakeCall) int { return x.recv.Compare(y.recv) })
	rel := func(t time.Time) string { return ms(t.Sub(forgotAt)) }
	var before, after *flakeCall
	var prev *flakeCall
	for i := range calls {
		c := &calls[i]
		if len(c.ids) == 0 {
			continue
		}
		if prev != nil && c.recv.After(forgotAt) && (after == nil || c.recv.Sub(prev.recv) > after.recv.Sub(before.recv)) {
			before, after = prev, c
		}
		prev = c
	}
	if before == nil {
		return "no IDs after the forgetting"
	}
	refused := map[string]int{}
	for _, c := range calls {
		if len(c.ids) == 0 && c.recv.After(before.recv) && c.recv.Before(after.recv) {
			refused[c.status]++
		}
	}
	return fmt.Sprintf("last IDs at %s (worker %d), then none for %s (answers %v), issued again at %s (worker %d), times after the forgetting",
		rel(before.recv), flakeWorker(before.ids[0]), ms(after.recv.Sub(before.recv)), refused, rel(after.recv), flakeWorker(after.ids[0]))
}

// where tells which answers held id, and id as the service decomposes it.
func (l *flakeLoad) where(in *instance, id int64, forgotAt time.Time) string {
	var parts []string
	for _, c := range l.calls {
		if slices.Contains(c.ids, id) {
			parts = append(parts, fmt.Sprintf("%s at %s", c.inst, ms(c.recv.Sub(forgotAt))))
		}
	}
	if r, err := in.ctl.get("/snowflake/" + strconv.FormatInt(id, 10)); err == nil {
		parts = append(parts, fmt.Sprintf("worker %d, timestamp_ms %d, sequence %d", r.WorkerID, r.TimestampMS, r.Sequence))
	}
	return strings.Join(parts, "; ")
}
