// Package leasetest is the conformance suite of workerlease.Store: one set of
// cases that every lease store passes, whatever it keeps its leases in
// (memory, SQL, Redis, etcd), in the mould of dex's storage conformance.
//
// A store's tests describe how to get fresh namespaces and call Run:
//
//	leasetest.Run(t, leasetest.Target{
//		Fresh:       func(tb testing.TB) leasetest.Namespace { … },
//		Unreachable: func(tb testing.TB) workerlease.Store { … },
//		TTL:         400 * time.Millisecond,
//	})
//
// The cases prove what the snowflake guarantees rest on: a worker ID is
// granted to one holder at a time, also to racing holders with clients of
// their own; renew and release are compare-and-sets on the token; expiry is
// judged by the store's clock, never the caller's; the Service refuses
// malformed input before any store sees it, and every store holds the
// widest input it passes; last_timestamp_ms passes to the next holder and
// never decreases; an unreachable store is an outage (ErrUnavailable),
// never a refusal; and a store that forgets (restarted without
// persistence, wiped, its rows deleted; or only one cluster's records, or
// one worker ID's) grants every affected worker ID with NoHistory, never
// brings a forgotten lease back on a renewal, and so makes a Session wait
// out the forgotten holder, who stops at its next renewal. How a store keeps a
// cluster's snowflake layout beside its leases is snowflake/leased's
// concern, and its suite (internal/layouttest) runs on the same Target.
package leasetest

import (
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// Target is one lease store under test.
type Target struct {
	// Fresh returns one fresh, empty namespace (a database, a key prefix),
	// removed at tb's cleanup. It skips tb when the store cannot run here.
	Fresh func(tb testing.TB) Namespace
	// Unreachable returns a handle on a store that does not answer (a
	// closed port). nil leaves the outage case out (memory has no server).
	Unreachable func(tb testing.TB) workerlease.Store
	// Genesis says that the store records having made a namespace empty
	// (a SQL table it created, a new MemoryStore), so that until it
	// forgets, an ID it has no record of was never leased and its grant has
	// history. A Redis or etcd cannot: empty is also what one that forgot
	// looks like, and every first grant of an ID there has none.
	Genesis bool
	// TTL is the shortest lease TTL the store honours precisely enough for
	// the expiry cases: 400ms for SQL, Redis and memory; etcd's leases count
	// whole seconds, with a floor of about 2s.
	TTL time.Duration
}

// Namespace is one fresh namespace of a store under test.
type Namespace struct {
	// Open returns a new handle with its own client, as another process
	// would have, closed at the cleanup of the tb passed to it.
	Open func(tb testing.TB) workerlease.Store
	// Forget makes the namespace lose every lease and layout record at
	// once, as the store would when it forgets: FLUSHALL or a restart
	// without persistence, a data directory wiped, the rows deleted.
	Forget func(tb testing.TB)
	// ForgetCluster makes the namespace lose every lease and layout record
	// of one cluster, and nothing of another: an operator's DELETE ...
	// WHERE cluster = ?, the cluster's Redis or etcd keys deleted.
	ForgetCluster func(tb testing.TB, cluster string)
	// ForgetWorker makes the namespace lose every lease record of one
	// worker ID of one cluster, and nothing of its neighbours: its row,
	// its Redis fields or its etcd keys deleted.
	ForgetWorker func(tb testing.TB, cluster string, workerID int64)
}

// env is what a case gets: its own fresh namespace.
type env struct {
	open          func(tb testing.TB) workerlease.Store
	forget        func(tb testing.TB)
	forgetCluster func(tb testing.TB, cluster string)
	forgetWorker  func(tb testing.TB, cluster string, workerID int64)
	genesis       bool
	unreachable   func(tb testing.TB) workerlease.Store
	ttl           time.Duration
}

// testCase is one behaviour the suite proves on a fresh namespace.
type testCase struct {
	name string
	test func(t *testing.T, e env)
}

// Run runs every case in parallel, each on a fresh namespace of tg. It skips
// t when the store cannot run here.
func Run(t *testing.T, tg Target) {
	if tg.TTL <= 0 {
		t.Fatalf("leasetest.Target.TTL = %v, want a positive TTL", tg.TTL)
	}
	// One probe namespace up front skips the whole suite in one line rather
	// than each case on its own.
	if ns := tg.Fresh(t); ns.Forget == nil || ns.ForgetCluster == nil || ns.ForgetWorker == nil {
		t.Fatalf("leasetest.Namespace: Forget, ForgetCluster and ForgetWorker are required: every store can lose records of any scope")
	}
	cases := slices.Concat(grantCases(), raceCases(), forgetCases())
	if tg.Unreachable != nil {
		cases = append(cases, testCase{"an unreachable store is an outage", testUnreachable})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := tg.Fresh(t)
			c.test(t, env{open: ns.Open, forget: ns.Forget, forgetCluster: ns.ForgetCluster, forgetWorker: ns.ForgetWorker,
				genesis: tg.Genesis, unreachable: tg.Unreachable, ttl: tg.TTL})
		})
	}
}

func grantCases() []testCase {
	return []testCase{
		{"new ID starts at zero with expiry by the store's clock", testAcquireNew},
		{"clusters are independent", testClustersIndependent},
		{"expired lease is taken over and the old token refused", testExpiredTakeover},
		{"renew raises last_timestamp_ms and never lowers it", testRenewTimestamp},
		{"release frees the ID for the next holder", testRelease},
		{"conflicts are classified", testLeaseConflicts},
		{"acquire prefers IDs at or below the caller's clock", testAcquirePreference},
		{"the widest input the Service passes is held whole", testWidths},
		{"the Service refuses invalid input before the store", testServiceRefuses},
		{"the caller's clock does not decide expiry", testCallerClockSkew},
	}
}

func raceCases() []testCase {
	return []testCase{
		{"concurrent acquirers share out every ID once", testConcurrentAcquire},
		{"16 holders with clients of their own race for 8 IDs", testSeparateClientsRace},
	}
}

const cluster = "c1"

func acquireRequest(token string, maxWorkerID int64) workerlease.AcquireRequest {
	return workerlease.AcquireRequest{
		Cluster:     cluster,
		MaxWorkerID: maxWorkerID,
		Token:       token,
		Holder:      "leasetest",
		TTL:         time.Minute,
		NowMS:       time.Now().UnixMilli(),
	}
}

func mustAcquire(t *testing.T, st workerlease.Store, req workerlease.AcquireRequest) workerlease.Lease {
	t.Helper()
	l, err := st.Acquire(t.Context(), req)
	if err != nil {
		t.Fatalf("Acquire(token %q): %v", req.Token, err)
	}
	return l
}

func mustRenew(t *testing.T, st workerlease.Store, l workerlease.Lease, lastTimestampMS int64) workerlease.Lease {
	t.Helper()
	r, err := st.Renew(t.Context(), l.Cluster, l.WorkerID, l.Token, time.Minute, lastTimestampMS)
	if err != nil {
		t.Fatalf("Renew(worker %d, token %q): %v", l.WorkerID, l.Token, err)
	}
	return r
}
