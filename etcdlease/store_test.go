package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/etcdtest"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// TestStore runs this package's own cases on one private etcd, each under a
// prefix of its own.
func TestStore(t *testing.T) {
	srv := etcdtest.Start(t)
	for _, c := range []struct {
		name string
		test func(t *testing.T, srv *etcdtest.Server)
	}{
		{"refusals name why the token does not hold the ID", testRefusals},
		{"last_timestamp_ms is never lowered, also after expiry", testLastTimestampNeverLowered},
		{"etcd's lease decides expiry, not the caller's clock", testExpiryByEtcd},
		{"TTL is rounded up to whole seconds", testTTLRoundedUp},
		{"release revokes the etcd lease", testReleaseRevokes},
		{"a cluster keeps its first layout", testLayout},
		{"cluster names cannot reach into each other's keys", testClusterEscaping},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, srv)
		})
	}
}

func testRefusals(t *testing.T, srv *etcdtest.Server) {
	st := openStore(t, srv, freshPrefix())
	held := mustAcquire(t, st, request("c", "held", 3))
	released := mustAcquire(t, st, request("c", "released", 3))
	short := request("c", "expired", 3)
	short.TTL = testTTL
	expired := mustAcquire(t, st, short)
	if err := st.Release(t.Context(), "c", released.WorkerID, "released", 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	waitExpired(t, st, expired)

	for _, tc := range []struct {
		name     string
		workerID int64
		token    string
		want     error
	}{
		{"never assigned", 3, "held", workerlease.ErrNotAssigned},
		{"another token holds it", held.WorkerID, "other", workerlease.ErrTokenMismatch},
		{"released by this token", released.WorkerID, "released", workerlease.ErrNotAssigned},
		{"released, asked by another token", released.WorkerID, "other", workerlease.ErrNotAssigned},
		{"this token's lease expired", expired.WorkerID, "expired", workerlease.ErrLeaseExpired},
		{"another token's lease expired", expired.WorkerID, "other", workerlease.ErrTokenMismatch},
	} {
		if _, err := st.Renew(t.Context(), "c", tc.workerID, tc.token, time.Minute, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: Renew error = %v, want %v", tc.name, err, tc.want)
		}
		if err := st.Release(t.Context(), "c", tc.workerID, tc.token, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: Release error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := st.Renew(t.Context(), "c", held.WorkerID, "held", time.Minute, 0); err != nil {
		t.Errorf("Renew by the holder after the refusals: %v", err)
	}
}

func testLastTimestampNeverLowered(t *testing.T, srv *etcdtest.Server) {
	st := openStore(t, srv, freshPrefix())
	req := request("c", "a", 0)
	req.TTL = testTTL
	l := mustAcquire(t, st, req)
	step := func(what string, call func() (int64, error), wantErr error, want int64) {
		t.Helper()
		got, err := call()
		if !errors.Is(err, wantErr) {
			t.Fatalf("%s: error = %v, want %v", what, err, wantErr)
		}
		if err == nil && got != want {
			t.Errorf("%s: last_timestamp_ms = %d, want %d", what, got, want)
		}
	}
	renew := func(ms int64) func() (int64, error) {
		return func() (int64, error) {
			r, err := st.Renew(t.Context(), "c", l.WorkerID, "a", testTTL, ms)
			return r.LastTimestampMS, err
		}
	}
	release := func(ms int64) func() (int64, error) {
		return func() (int64, error) { return 0, st.Release(t.Context(), "c", l.WorkerID, "a", ms) }
	}
	step("Renew(100)", renew(100), nil, 100)
	step("Renew(50)", renew(50), nil, 100)
	step("Renew(0)", renew(0), nil, 100)
	waitExpired(t, st, l)
	// Refused, yet recorded: the late holder may have issued IDs up to
	// these, and only ever raised.
	step("Renew(300) after expiry", renew(300), workerlease.ErrLeaseExpired, 0)
	step("Release(200) after expiry", release(200), workerlease.ErrLeaseExpired, 0)

	next := mustAcquire(t, st, request("c", "b", 0))
	if next.WorkerID != l.WorkerID || next.LastTimestampMS != 300 {
		t.Fatalf("takeover = worker %d with last_timestamp_ms %d, want worker %d with 300", next.WorkerID, next.LastTimestampMS, l.WorkerID)
	}
	step("late Renew(900) by the old token", renew(900), workerlease.ErrTokenMismatch, 0)
	if err := st.Release(t.Context(), "c", next.WorkerID, "b", 250); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := mustAcquire(t, st, request("c", "c", 0)).LastTimestampMS; got != 300 {
		t.Errorf("after a release with 250 and a refused late renew with 900: last_timestamp_ms = %d, want 300", got)
	}
}

// testExpiryByEtcd: callers whose clocks are hours off can neither take a
// live lease nor make one last longer; etcd ends it on its own time.
func testExpiryByEtcd(t *testing.T, srv *etcdtest.Server) {
	st := openStore(t, srv, freshPrefix())
	for _, skew := range []time.Duration{10 * time.Hour, -10 * time.Hour} {
		cluster := "skew" + skew.String()
		req := request(cluster, "a", 0)
		req.TTL, req.NowMS = testTTL, time.Now().Add(skew).UnixMilli()
		before := time.Now()
		l := mustAcquire(t, st, req)
		if d := l.ExpiresAt.Sub(before); d < testTTL-100*time.Millisecond || d > testTTL+time.Second {
			t.Errorf("skew %v: ExpiresAt is %v after the call began, want about %v", skew, d, testTTL)
		}
		req.Token, req.NowMS = "b", time.Now().Add(2*skew).UnixMilli()
		if _, err := st.Acquire(t.Context(), req); !errors.Is(err, workerlease.ErrNoWorkerID) {
			t.Errorf("skew %v: Acquire of a live lease: error = %v, want %v", skew, err, workerlease.ErrNoWorkerID)
		}
		waitExpired(t, st, l)
		if took := time.Since(before); took > testTTL+2*time.Second {
			t.Errorf("skew %v: the lease lasted %v, want about %v", skew, took, testTTL)
		}
		if got := mustAcquire(t, st, req); got.WorkerID != l.WorkerID {
			t.Errorf("skew %v: Acquire after expiry = worker %d, want %d", skew, got.WorkerID, l.WorkerID)
		}
	}
}

func testTTLRoundedUp(t *testing.T, srv *etcdtest.Server) {
	st := openStore(t, srv, freshPrefix())
	for i, ttl := range []time.Duration{time.Millisecond, 400 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second} {
		req := request("c", fmt.Sprintf("t%d", i), 7)
		req.TTL = ttl
		before := time.Now()
		l := mustAcquire(t, st, req)
		want := (ttl + time.Second - 1).Truncate(time.Second)
		if d := l.ExpiresAt.Sub(before); d < want || d > want+time.Second {
			t.Errorf("TTL %v: ExpiresAt is %v after the call began, want %v (whole seconds, rounded up)", ttl, d, want)
		}
	}
}

func testReleaseRevokes(t *testing.T, srv *etcdtest.Server) {
	st := openStore(t, srv, freshPrefix())
	l := mustAcquire(t, st, request("c", "a", 0))
	w, err := st.readWorker(t.Context(), "c", l.WorkerID)
	if err != nil {
		t.Fatalf("readWorker: %v", err)
	}
	if err := st.Release(t.Context(), "c", l.WorkerID, "a", 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	ttl, err := st.c.TimeToLive(t.Context(), w.hold.Lease)
	if err != nil {
		t.Fatalf("TimeToLive: %v", err)
	}
	if ttl.TTL != -1 {
		t.Errorf("etcd lease %x after Release: TTL %d, want -1 (revoked)", w.hold.Lease, ttl.TTL)
	}
}

func testLayout(t *testing.T, srv *etcdtest.Server) {
	prefix := freshPrefix()
	a, b := openStore(t, srv, prefix), openStore(t, srv, prefix)
	const epoch = int64(1_767_225_600_000)
	for _, tc := range []struct {
		st      *Store
		cluster string
		epochMS int64
		bits    int
		want    error
	}{
		{a, "x", epoch, 10, nil},
		{b, "x", epoch, 10, nil},
		{b, "x", epoch, 12, snowflake.ErrLayoutMismatch},
		{a, "x", epoch - 1, 10, snowflake.ErrLayoutMismatch},
		{b, "y", epoch - 1, 12, nil},
		{a, "y", epoch - 1, 12, nil},
	} {
		if err := tc.st.CheckLayout(t.Context(), tc.cluster, tc.epochMS, tc.bits); !errors.Is(err, tc.want) {
			t.Errorf("CheckLayout(%s, %d, %d) = %v, want %v", tc.cluster, tc.epochMS, tc.bits, err, tc.want)
		}
	}
}

func testClusterEscaping(t *testing.T, srv *etcdtest.Server) {
	st := openStore(t, srv, freshPrefix())
	for _, c := range []string{"a", "a/hold", "a%2Fhold", "a/last/0"} {
		if l := mustAcquire(t, st, request(c, "t-"+c, 0)); l.WorkerID != 0 {
			t.Errorf("Acquire in cluster %q = worker %d, want 0: its keys met another cluster's", c, l.WorkerID)
		}
	}
}

// TestUnreachable: with no etcd answering, every call ends by its context's
// deadline with a fault, never a refusal that would make a keeper drop a
// lease it may still hold.
func TestUnreachable(t *testing.T) {
	st := unreachable(t)
	const deadline = 500 * time.Millisecond
	for _, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Acquire", func(ctx context.Context) error { _, err := st.Acquire(ctx, request("c", "a", 7)); return err }},
		{"Renew", func(ctx context.Context) error { _, err := st.Renew(ctx, "c", 3, "a", time.Minute, 0); return err }},
		{"Release", func(ctx context.Context) error { return st.Release(ctx, "c", 3, "a", 0) }},
		{"CheckLayout", func(ctx context.Context) error { return st.CheckLayout(ctx, "c", 1, 10) }},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		start := time.Now()
		err := c.call(ctx)
		cancel()
		if took := time.Since(start); took > deadline+time.Second {
			t.Errorf("%s took %v, past its %v deadline", c.name, took, deadline)
		}
		if err == nil || isRefusal(err) {
			t.Errorf("%s on an unreachable etcd: error = %v, want a fault", c.name, err)
		}
	}
}

// TestEtcdRestart: while etcd is down calls fail as faults; once it is back
// the lease taken before is still there and renews.
func TestEtcdRestart(t *testing.T) {
	srv := etcdtest.Start(t)
	st := openStore(t, srv, freshPrefix())
	l := mustAcquire(t, st, request("c", "a", 7))

	srv.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	_, err := st.Renew(ctx, "c", l.WorkerID, "a", time.Minute, 10)
	cancel()
	if err == nil || isRefusal(err) {
		t.Fatalf("Renew with etcd down: error = %v, want a fault", err)
	}

	srv.Restart(t)
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r, err := st.Renew(ctx, "c", l.WorkerID, "a", time.Minute, 10)
	if err != nil || r.LastTimestampMS != 10 {
		t.Fatalf("Renew after restart = last_timestamp_ms %d, error %v; want 10, nil", r.LastTimestampMS, err)
	}
}
