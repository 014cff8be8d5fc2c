package workerlease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestSessionWaitsWithoutHistory follows a grant the store has no record
// of, on the fake clock: the lease is held and renewed at once, but the
// fence stays closed until TTL + ClockSkew after the grant was asked for.
func TestSessionWaitsWithoutHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const skew = time.Second
		mem := NewMemoryStore(nil)
		mem.Forget() // no genesis: an ID with no record may have been forgotten
		svc := newTestService(t, mem, Config{TTL: testTTL})
		s, err := NewSession(t.Context(), SessionConfig{Service: svc, ClockSkew: skew})
		if err != nil {
			t.Fatalf("NewSession: %v", err)
		}
		defer s.Close(t.Context(), 0)
		if !s.Lease().NoHistory {
			t.Fatalf("first grant on a store that forgot: NoHistory false")
		}
		if got, want := s.Opens(time.Now()), testTTL+skew; got != want {
			t.Errorf("Opens() = %v, want %v", got, want)
		}
		time.Sleep(testTTL + skew - time.Nanosecond)
		synctest.Wait()
		if fenceNow(s) {
			t.Errorf("fence open %v after the grant, before TTL + ClockSkew", testTTL+skew-time.Nanosecond)
		}
		if _, held := s.Renewed(); !held {
			t.Errorf("lease not held while waiting: the session must renew meanwhile")
		}
		time.Sleep(time.Nanosecond)
		if !fenceNow(s) || s.Opens(time.Now()) != 0 {
			t.Errorf("fence closed at TTL + ClockSkew (Opens %v)", s.Opens(time.Now()))
		}
	})
}

// TestMemoryGenesis: a MemoryStore began empty, so an ID it has no record
// of was never leased, until it forgets; then every such grant waits.
func TestMemoryGenesis(t *testing.T) {
	mem := NewMemoryStore(nil)
	svc := newTestService(t, mem, Config{TTL: testTTL, MaxWorkerID: 3})
	a, err := svc.Acquire(t.Context(), "", "")
	if err != nil || a.NoHistory {
		t.Fatalf("first grant = %+v, %v; want one with history", a, err)
	}
	mem.Forget()
	if b, err := svc.Acquire(t.Context(), "", ""); err != nil || !b.NoHistory {
		t.Errorf("grant after Forget = %+v, %v; want NoHistory", b, err)
	}
}

// TestSessionChecksLayoutAfterGrant: a store that forgot its leases forgot
// the cluster's layout too, and the first holder after records its own; a
// holder of another layout is refused at its next grant, which it gives
// back.
func TestSessionChecksLayoutAfterGrant(t *testing.T) {
	mem := NewMemoryStore(nil)
	svc := newTestService(t, mem, Config{TTL: testTTL, MaxWorkerID: 1})
	if err := mem.CheckLayout(t.Context(), svc.Cluster(), 0, 1); err != nil {
		t.Fatalf("CheckLayout: %v", err)
	}
	// What a generator's owner passes: its own layout, checked by the store.
	checkLayout := func(epochMS int64) func(context.Context, string) error {
		return func(ctx context.Context, cluster string) error { return mem.CheckLayout(ctx, cluster, epochMS, 1) }
	}
	_, err := NewSession(t.Context(), SessionConfig{Service: svc, CheckLayout: checkLayout(1000)})
	if !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("NewSession with another layout = %v, want ErrLayoutMismatch", err)
	}
	if got := mustLease(t, mem, 0); !got.released {
		t.Errorf("the grant refused for its layout was not given back: %+v", got)
	}
	s, err := NewSession(t.Context(), SessionConfig{Service: svc, CheckLayout: checkLayout(0)})
	if err != nil {
		t.Fatalf("NewSession with the cluster's layout: %v", err)
	}
	s.Close(t.Context(), 0)
}
