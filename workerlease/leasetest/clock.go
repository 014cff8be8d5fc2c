package leasetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// testCallerClockSkew: a caller whose clock is a day ahead (or behind) gets
// a lease that the store times from its own clock, cannot take a live lease
// over by claiming it has expired, and renews to an expiry by the store's
// clock. The seeds that judged expiry by the caller's clock gave a live ID
// to a second holder exactly this way.
func testCallerClockSkew(t *testing.T, e env) {
	const day = 24 * time.Hour
	st := e.open(t)
	for _, skew := range []time.Duration{day, -day} {
		c := "skew" + map[bool]string{true: "-ahead", false: "-behind"}[skew > 0]
		req := acquireRequest("token-a", 0)
		req.Cluster, req.NowMS = c, time.Now().Add(skew).UnixMilli()
		before := time.Now()
		l := mustAcquire(t, st, req)
		checkExpiry(t, "Acquire with the caller "+skew.String()+" off", l.ExpiresAt, before, time.Minute)

		req.Token, req.NowMS = "token-b", time.Now().Add(2*skew).UnixMilli()
		if _, err := st.Acquire(t.Context(), req); !errors.Is(err, workerlease.ErrNoWorkerID) {
			t.Errorf("%s: Acquire of a live lease by a caller whose clock says it expired: error = %v, want %v",
				c, err, workerlease.ErrNoWorkerID)
		}
		before = time.Now()
		r := mustRenew(t, st, l, req.NowMS)
		checkExpiry(t, "Renew with the caller "+skew.String()+" off", r.ExpiresAt, before, time.Minute)
	}

	// The same through a Service whose clock is a day ahead.
	svc, err := workerlease.NewService(st, workerlease.Config{
		Cluster: "skew-service", MaxWorkerID: 1, TTL: time.Minute,
		Now: func() time.Time { return time.Now().Add(day) },
	})
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	before := time.Now()
	l, err := svc.Acquire(t.Context(), "", "skewed")
	if err != nil {
		t.Fatalf("Service.Acquire: %v", err)
	}
	checkExpiry(t, "Service.Acquire with its clock a day ahead", l.ExpiresAt, before, time.Minute)
	if _, err := svc.Acquire(t.Context(), "", "skewed-2"); err != nil {
		t.Fatalf("second Service.Acquire: %v", err)
	}
	if _, err := svc.Acquire(t.Context(), "", "skewed-3"); !errors.Is(err, workerlease.ErrNoWorkerID) {
		t.Errorf("third Service.Acquire: error = %v, want %v", err, workerlease.ErrNoWorkerID)
	}
}

// checkExpiry fails t unless at is about before+ttl: a store whose clock
// runs on this machine or close to it, never a caller's skewed one.
func checkExpiry(t *testing.T, what string, at, before time.Time, ttl time.Duration) {
	t.Helper()
	const slack = 30 * time.Second
	if at.Before(before.Add(ttl-slack)) || at.After(time.Now().Add(ttl+slack)) {
		t.Errorf("%s: ExpiresAt = %v, want about %v", what, at, before.Add(ttl).UTC())
	}
}

// testUnreachable: every call on a store that does not answer ends within
// its deadline as an outage: ErrUnavailable through the Service, never one
// of the refusals (which would make a keeper give up a lease it may hold).
func testUnreachable(t *testing.T, e env) {
	svc, err := workerlease.NewService(e.unreachable(t), workerlease.Config{Cluster: cluster, MaxWorkerID: 7, TTL: time.Minute})
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	const token = "AAAAAAAAAAAAAAAAAAAAAA"
	for _, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Acquire", func(ctx context.Context) error { _, err := svc.Acquire(ctx, "", "down"); return err }},
		{"Renew", func(ctx context.Context) error { _, err := svc.Renew(ctx, "", 3, token, 0); return err }},
		{"Release", func(ctx context.Context) error { return svc.Release(ctx, "", 3, token, 0) }},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		start := time.Now()
		err := c.call(ctx)
		cancel()
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s on an unreachable store took %v, past its 3s deadline", c.name, took)
		}
		if !errors.Is(err, workerlease.ErrUnavailable) {
			t.Errorf("%s on an unreachable store: error = %v, want %v", c.name, err, workerlease.ErrUnavailable)
		}
	}
}

// testSeparateClientsRace: 16 holders, each with a client of its own as 16
// processes would have, acquire from a cluster of 8 worker IDs at once.
// Every ID goes to exactly one; the other 8 hear ErrNoWorkerID.
func testSeparateClientsRace(t *testing.T, e env) {
	const holders, maxWorkerID = 16, 7
	stores := make([]workerlease.Store, holders)
	for i := range stores {
		stores[i] = e.open(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	type result struct {
		lease workerlease.Lease
		err   error
	}
	results := make([]result, holders)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			<-start
			req := acquireRequest(fmtToken(i), maxWorkerID)
			results[i].lease, results[i].err = st.Acquire(ctx, req)
		})
	}
	close(start)
	wg.Wait()

	granted, refused := map[int64]string{}, 0
	for _, r := range results {
		switch {
		case errors.Is(r.err, workerlease.ErrNoWorkerID):
			refused++
		case r.err != nil:
			t.Errorf("Acquire: %v", r.err)
		case granted[r.lease.WorkerID] != "":
			t.Errorf("worker ID %d granted to %q and %q", r.lease.WorkerID, granted[r.lease.WorkerID], r.lease.Token)
		default:
			granted[r.lease.WorkerID] = r.lease.Token
		}
	}
	if len(granted) != maxWorkerID+1 || refused != holders-maxWorkerID-1 {
		t.Errorf("%d IDs granted and %d refused, want %d and %d", len(granted), refused, maxWorkerID+1, holders-maxWorkerID-1)
	}
	// The store agrees on who holds what: each holder renews its own ID.
	for id, token := range granted {
		if _, err := stores[0].Renew(ctx, cluster, id, token, time.Minute, 0); err != nil {
			t.Errorf("Renew(worker %d, token %q): %v", id, token, err)
		}
	}
}

func fmtToken(i int) string { return "racer-" + string(rune('a'+i)) }
