package workerlease

import (
	"context"
	"errors"
	"slices"
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

// TestSessionChecksLayoutAfterGrant: CheckLayout is asked after each grant
// with the lease's cluster (a store that forgot its leases forgot the
// cluster's layout with them, and a holder of another layout must hear of
// it at its next grant); its refusal ends NewSession with that error and
// gives the grant back.
func TestSessionChecksLayoutAfterGrant(t *testing.T) {
	mem := NewMemoryStore(nil)
	svc := newTestService(t, mem, Config{TTL: testTTL, MaxWorkerID: 1})
	// What a generator's owner passes (leased.CheckEachLease); workerlease
	// only makes the call.
	refused := errors.New("the cluster records another layout")
	var asked []string
	checkLayout := func(answer error) func(context.Context, string) error {
		return func(_ context.Context, cluster string) error { asked = append(asked, cluster); return answer }
	}
	_, err := NewSession(t.Context(), SessionConfig{Service: svc, CheckLayout: checkLayout(refused)})
	if !errors.Is(err, refused) {
		t.Fatalf("NewSession refused by CheckLayout = %v, want %v", err, refused)
	}
	if got := mustLease(t, mem, 0); !got.released {
		t.Errorf("the grant refused for its layout was not given back: %+v", got)
	}
	s, err := NewSession(t.Context(), SessionConfig{Service: svc, CheckLayout: checkLayout(nil)})
	if err != nil {
		t.Fatalf("NewSession with the cluster's layout: %v", err)
	}
	s.Close(t.Context(), 0)
	if want := []string{svc.Cluster(), svc.Cluster()}; !slices.Equal(asked, want) {
		t.Errorf("CheckLayout asked for clusters %q, want %q", asked, want)
	}
}
