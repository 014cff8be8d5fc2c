package leasetest

import (
	"errors"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// A store that forgets (docs/api.md §3) answers as if earlier holders never
// were, while they may still be issuing IDs. These cases hold every store
// to what makes that safe: it says when it has no history of a worker ID,
// it never brings a forgotten lease back, and so a Session on it waits the
// forgotten holder out, who stops at its next renewal.
func forgetCases() []testCase {
	return []testCase{
		{"a first grant has history only on a store that made itself empty; a grant after a release has", testNoHistory},
		{"after the store forgets, a grant has no history and the old holder is refused", testForgottenGrant},
		{"a renewal or release after forgetting does not bring the lease back", testForgottenNotRecreated},
		{"a session waits out the holder of a forgotten lease", testSessionWaitsOutForgotten},
		{"after one cluster's records are lost, its grants have no history and another cluster's keep theirs", testForgottenCluster},
		{"after one worker ID's records are lost, its next grant has no history, again after a second loss", testForgottenWorker},
	}
}

func testNoHistory(t *testing.T, e env) {
	st := e.open(t)
	a := mustAcquire(t, st, acquireRequest("token-a", 0))
	if a.NoHistory == e.genesis {
		t.Errorf("first grant of worker %d: NoHistory %v, want %v (the store made itself empty: %v)", a.WorkerID, a.NoHistory, !e.genesis, e.genesis)
	}
	const last = 1_700_000_000_000
	mustRenew(t, st, a, last)
	if err := st.Release(t.Context(), cluster, a.WorkerID, a.Token, 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	b := mustAcquire(t, st, acquireRequest("token-b", 0))
	if b.WorkerID != a.WorkerID || b.NoHistory || b.LastTimestampMS != last {
		t.Errorf("grant after release = worker %d, NoHistory %v, last_timestamp_ms %d; want worker %d, false, %d",
			b.WorkerID, b.NoHistory, b.LastTimestampMS, a.WorkerID, last)
	}
}

func testForgottenGrant(t *testing.T, e env) {
	st := e.open(t)
	a := mustAcquire(t, st, acquireRequest("token-a", 1))
	mustRenew(t, st, a, time.Now().UnixMilli())
	e.forget(t)

	other := e.open(t) // another process, starting after the store forgot
	b := mustAcquire(t, other, acquireRequest("token-b", 1))
	if b.WorkerID != a.WorkerID || !b.NoHistory {
		t.Errorf("grant after forgetting = worker %d, NoHistory %v; want worker %d (free again), NoHistory true",
			b.WorkerID, b.NoHistory, a.WorkerID)
	}
	if _, err := st.Renew(t.Context(), cluster, a.WorkerID, a.Token, time.Minute, 0); !leaseGone(err) {
		t.Errorf("old holder's Renew after forgetting = %v, want the lease gone (not assigned, token mismatch)", err)
	}
	if err := st.Release(t.Context(), cluster, a.WorkerID, a.Token, 0); !leaseGone(err) {
		t.Errorf("old holder's Release after forgetting = %v, want the lease gone", err)
	}
	mustRenew(t, other, b, 0) // the new holder keeps it
}

func testForgottenNotRecreated(t *testing.T, e env) {
	st := e.open(t)
	a := mustAcquire(t, st, acquireRequest("token-a", 1))
	e.forget(t)
	if _, err := st.Renew(t.Context(), cluster, a.WorkerID, a.Token, time.Minute, time.Now().UnixMilli()); !leaseGone(err) {
		t.Errorf("Renew of a forgotten lease = %v, want the lease gone", err)
	}
	if err := st.Release(t.Context(), cluster, a.WorkerID, a.Token, time.Now().UnixMilli()); !leaseGone(err) {
		t.Errorf("Release of a forgotten lease = %v, want the lease gone", err)
	}
	// Had either written a record, worker 0 would be held (the grant would
	// pick 1) or would have a history.
	b := mustAcquire(t, st, acquireRequest("token-b", 1))
	if b.WorkerID != a.WorkerID || !b.NoHistory {
		t.Errorf("grant after refused renewals = worker %d, NoHistory %v; want worker %d, NoHistory true",
			b.WorkerID, b.NoHistory, a.WorkerID)
	}
}

// testSessionWaitsOutForgotten runs the fault on sessions: A holds
// the only worker ID, the store forgets, B is granted it at once. A must
// stop (at its next renewal) before B's fence opens, TTL + skew after B's
// grant.
func testSessionWaitsOutForgotten(t *testing.T, e env) {
	const skew = 100 * time.Millisecond
	session := func(st workerlease.Store) *workerlease.Session {
		svc, err := workerlease.NewService(st, workerlease.Config{Cluster: cluster, MaxWorkerID: 0, TTL: e.ttl})
		if err != nil {
			t.Fatalf("NewService: %v", err)
		}
		s, err := workerlease.NewSession(t.Context(), workerlease.SessionConfig{Service: svc, ClockSkew: skew})
		if err != nil {
			t.Fatalf("NewSession: %v", err)
		}
		t.Cleanup(func() { _ = s.Close(t.Context(), 0) })
		return s
	}
	// A's grant waits only where the store cannot tell a new ID from a
	// forgotten one.
	a := session(e.open(t))
	if wait := a.Opens(time.Now()); (wait == 0) != e.genesis {
		t.Fatalf("the first session waits %v; want a wait exactly when the store did not make itself empty (%v)", wait, e.genesis)
	}
	time.Sleep(a.Opens(time.Now()))
	if !a.Fence(time.Now(), time.Now().UnixMilli()) {
		t.Fatalf("A's fence closed after its wait: %v", a.Err())
	}
	e.forget(t)
	granted := time.Now()
	b := session(e.open(t))
	if !b.Lease().NoHistory {
		t.Fatalf("B's grant after forgetting: NoHistory false")
	}
	// Judged from before B asked for its grant, not from now: making the
	// session may take a loaded machine a good part of the TTL.
	if now := time.Now(); now.Add(b.Opens(now)).Sub(granted) < e.ttl+skew {
		t.Errorf("B's fence opens %v after its grant was asked for, want at least the TTL %v + skew %v",
			now.Add(b.Opens(now)).Sub(granted), e.ttl, skew)
	}
	deadline := time.After(3*e.ttl + skew + 5*time.Second)
	var aStopped time.Duration
	for !b.Fence(time.Now(), time.Now().UnixMilli()) {
		if aStopped == 0 {
			select {
			case <-a.Done():
				aStopped = time.Since(granted)
			default:
			}
		}
		select {
		case <-deadline:
			t.Fatalf("B's fence still closed %v after its grant", time.Since(granted))
		case <-time.After(5 * time.Millisecond):
		}
	}
	opened := time.Since(granted)
	if aStopped == 0 {
		t.Fatalf("B's fence opened %v after its grant while A still held its forgotten lease (A: %v)", opened, a.Err())
	}
	if !errors.Is(a.Err(), workerlease.ErrLeaseLost) {
		t.Errorf("A ended with %v, want ErrLeaseLost", a.Err())
	}
	t.Logf("A stopped %v after B's grant; B's fence opened %v after it (TTL %v + skew %v)", aStopped, opened, e.ttl, skew)
}

// testForgottenCluster: the records of one cluster are lost (DELETE ...
// WHERE cluster = ?, its keys deleted) while another cluster's stay. The
// store must not take the lost worker IDs for new ones: what is left of
// the store is no proof that they were never leased.
func testForgottenCluster(t *testing.T, e env) {
	const other = "c2"
	otherReq := func(token string) workerlease.AcquireRequest {
		req := acquireRequest(token, 3)
		req.Cluster = other
		return req
	}
	st := e.open(t)
	a := mustAcquire(t, st, acquireRequest("token-a", 3))
	b := mustAcquire(t, st, acquireRequest("token-b", 3))
	o := mustAcquire(t, st, otherReq("token-o"))
	last := time.Now().UnixMilli()
	for _, l := range []workerlease.Lease{a, b, o} {
		mustRenew(t, st, l, last)
	}
	e.forgetCluster(t, cluster)

	next := e.open(t) // another process, starting after the loss
	for _, old := range []workerlease.Lease{a, b} {
		g := mustAcquire(t, next, acquireRequest("token-n"+old.Token[len("token-"):], 3))
		if g.WorkerID != old.WorkerID || !g.NoHistory || g.LastTimestampMS != 0 {
			t.Errorf("grant after the cluster's records were lost = worker %d, NoHistory %v, last_timestamp_ms %d; want worker %d, NoHistory true, 0",
				g.WorkerID, g.NoHistory, g.LastTimestampMS, old.WorkerID)
		}
		if _, err := st.Renew(t.Context(), cluster, old.WorkerID, old.Token, time.Minute, 0); !leaseGone(err) {
			t.Errorf("Renew of worker %d, whose record was lost = %v, want the lease gone", old.WorkerID, err)
		}
	}
	if r := mustRenew(t, st, o, 0); r.LastTimestampMS != last {
		t.Errorf("the other cluster's lease after the loss: last_timestamp_ms %d, want %d", r.LastTimestampMS, last)
	}
	if err := st.Release(t.Context(), other, o.WorkerID, o.Token, 0); err != nil {
		t.Fatalf("Release in the other cluster: %v", err)
	}
	if g := mustAcquire(t, next, otherReq("token-p")); g.WorkerID != o.WorkerID || g.NoHistory || g.LastTimestampMS != last {
		t.Errorf("the other cluster's next grant = worker %d, NoHistory %v, last_timestamp_ms %d; want worker %d, false, %d",
			g.WorkerID, g.NoHistory, g.LastTimestampMS, o.WorkerID, last)
	}
}

// testForgottenWorker: the records of worker ID 1 are lost while 0 and 2
// stay held, so the lowest free ID is the gap; a grant re-creates it, and
// it is lost again before anyone looks. Each grant of the gap has no
// history; its neighbours keep theirs.
func testForgottenWorker(t *testing.T, e env) {
	st := e.open(t)
	last := time.Now().UnixMilli()
	var held [3]workerlease.Lease
	for i := range held {
		held[i] = mustAcquire(t, st, acquireRequest("token-"+string(rune('a'+i)), 2))
		mustRenew(t, st, held[i], last+int64(i))
	}
	gap := held[1]
	next := e.open(t)
	for _, token := range []string{"token-x", "token-y"} {
		e.forgetWorker(t, cluster, gap.WorkerID)
		g := mustAcquire(t, next, acquireRequest(token, 2))
		if g.WorkerID != gap.WorkerID || !g.NoHistory || g.LastTimestampMS != 0 {
			t.Errorf("grant after worker %d's record was lost = worker %d, NoHistory %v, last_timestamp_ms %d; want worker %d, NoHistory true, 0",
				gap.WorkerID, g.WorkerID, g.NoHistory, g.LastTimestampMS, gap.WorkerID)
		}
		if _, err := st.Renew(t.Context(), cluster, gap.WorkerID, gap.Token, time.Minute, 0); !leaseGone(err) {
			t.Errorf("Renew of worker %d, whose record was lost = %v, want the lease gone", gap.WorkerID, err)
		}
		gap = g
	}
	for _, l := range []workerlease.Lease{held[0], held[2]} {
		mustRenew(t, st, l, 0)
		if err := st.Release(t.Context(), cluster, l.WorkerID, l.Token, 0); err != nil {
			t.Fatalf("Release of worker %d: %v", l.WorkerID, err)
		}
		g := mustAcquire(t, next, acquireRequest("token-z"+l.Token[len("token-"):], 2))
		if want := last + l.WorkerID; g.WorkerID != l.WorkerID || g.NoHistory || g.LastTimestampMS != want {
			t.Errorf("grant of neighbour %d = worker %d, NoHistory %v, last_timestamp_ms %d; want worker %d, false, %d",
				l.WorkerID, g.WorkerID, g.NoHistory, g.LastTimestampMS, l.WorkerID, want)
		}
	}
}

// leaseGone reports the refusals that tell a holder its lease is no longer
// its own.
func leaseGone(err error) bool {
	return errors.Is(err, workerlease.ErrNotAssigned) || errors.Is(err, workerlease.ErrTokenMismatch) ||
		errors.Is(err, workerlease.ErrLeaseExpired)
}
