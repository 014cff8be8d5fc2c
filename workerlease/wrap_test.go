package workerlease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestSessionWrapsGrant: a session on a grant already made acquires
// nothing, keeps that grant, and does not return before its first renewal
// has stored a reservation.
func TestSessionWrapsGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		acquires, renewals := newCalls(), newCalls()
		gate := make(chan struct{})
		fs := &faultStore{Store: mem}
		fs.AcquireFunc = func(ctx context.Context, req AcquireRequest) (Lease, error) {
			acquires.add(0)
			return mem.Acquire(ctx, req)
		}
		fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			if renewals.add(last) == 1 {
				<-gate
			}
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		svc := newTestService(t, fs, Config{TTL: testTTL})
		grant, err := svc.Acquire(t.Context(), "", "")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		time.Sleep(5 * time.Second) // the grant is older than the session
		start := time.Now()
		type result struct {
			s   *Session
			err error
		}
		made := make(chan result, 1)
		go func() {
			s, err := NewSession(context.Background(), SessionConfig{Service: svc, Lease: &grant})
			made <- result{s, err}
		}()
		synctest.Wait()
		select {
		case r := <-made:
			t.Fatalf("NewSession returned before its first renewal: %v, %v", r.s, r.err)
		default:
		}
		if row := mustLease(t, mem, grant.WorkerID); row.lastTimestampMS != 0 {
			t.Errorf("last_timestamp_ms before the first renewal = %d, want 0", row.lastTimestampMS)
		}
		close(gate)
		r := <-made
		if r.err != nil {
			t.Fatalf("NewSession: %v", r.err)
		}
		s := r.s
		defer closeSession(t, s, 0)
		if got := acquires.count(); got != 1 {
			t.Errorf("acquisitions = %d, want 1: the session must keep the grant, not acquire", got)
		}
		if got := s.Lease(); got != grant {
			t.Errorf("Lease() = %+v, want the wrapped grant %+v", got, grant)
		}
		reserve := start.Add(testTTL).UnixMilli()
		if row := mustLease(t, mem, grant.WorkerID); row.lastTimestampMS != reserve {
			t.Errorf("last_timestamp_ms after the first renewal = %d, want %d", row.lastTimestampMS, reserve)
		}
		if !fenceNow(s) {
			t.Errorf("Fence() after the first renewal = false, want true")
		}
		time.Sleep(12 * time.Second) // renewed again at 10s
		if got := renewals.count(); got != 2 {
			t.Errorf("renewals = %d, want 2: the session keeps the wrapped grant alive", got)
		}
	})
}

// TestSessionWrapsGrantWithoutHistory: the wait of a grant the store has no
// record of applies to a wrapped grant too, measured from NewSession's call
// (later than the grant, so never shorter than it must be).
func TestSessionWrapsGrantWithoutHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const skew = time.Second
		mem := NewMemoryStore(nil)
		mem.Forget()
		svc := newTestService(t, mem, Config{TTL: testTTL})
		grant, err := svc.Acquire(t.Context(), "", "")
		if err != nil || !grant.NoHistory {
			t.Fatalf("Acquire on a store that forgot = %+v, %v; want NoHistory", grant, err)
		}
		time.Sleep(5 * time.Second)
		s, err := NewSession(t.Context(), SessionConfig{Service: svc, Lease: &grant, ClockSkew: skew})
		if err != nil {
			t.Fatalf("NewSession: %v", err)
		}
		defer closeSession(t, s, 0)
		if got, want := s.Opens(time.Now()), testTTL+skew; got != want {
			t.Errorf("Opens() = %v, want %v", got, want)
		}
		time.Sleep(testTTL + skew - time.Nanosecond)
		synctest.Wait()
		if fenceNow(s) {
			t.Errorf("fence open before TTL + ClockSkew after NewSession")
		}
		if _, held := s.Renewed(); !held {
			t.Errorf("lease not held while waiting: the session must renew meanwhile")
		}
		time.Sleep(time.Nanosecond)
		if !fenceNow(s) {
			t.Errorf("fence closed at TTL + ClockSkew after NewSession")
		}
	})
}

// TestSessionWrapsGrantRefused: a wrapped grant that the store refuses at
// its first renewal (expired, or taken over) ends NewSession with
// ErrLeaseLost; one refused by CheckLayout ends it with that error and is
// given back.
func TestSessionWrapsGrantRefused(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemoryStore(nil)
			svc := newTestService(t, mem, Config{TTL: testTTL})
			grant, err := svc.Acquire(t.Context(), "", "")
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			time.Sleep(testTTL) // the store's TTL runs out
			s, err := NewSession(t.Context(), SessionConfig{Service: svc, Lease: &grant})
			if !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrLeaseExpired) || s != nil {
				t.Errorf("NewSession() = %v, %v, want error %v wrapping %v", s, err, ErrLeaseLost, ErrLeaseExpired)
			}
		})
	})
	t.Run("taken over", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemoryStore(nil)
			svc := newTestService(t, mem, Config{TTL: testTTL, MaxWorkerID: 1})
			grant, err := svc.Acquire(t.Context(), "", "")
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			time.Sleep(testTTL)
			if next, err := svc.Acquire(t.Context(), "", ""); err != nil || next.WorkerID != grant.WorkerID {
				t.Fatalf("Acquire after the TTL = %+v, %v; want worker ID %d again", next, err, grant.WorkerID)
			}
			s, err := NewSession(t.Context(), SessionConfig{Service: svc, Lease: &grant})
			if !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrTokenMismatch) || s != nil {
				t.Errorf("NewSession() = %v, %v, want error %v wrapping %v", s, err, ErrLeaseLost, ErrTokenMismatch)
			}
			if row := mustLease(t, mem, grant.WorkerID); !row.live(mem.now()) || row.released {
				t.Errorf("the new holder's lease was disturbed by the refused session: %+v", row)
			}
		})
	})
	t.Run("layout mismatch", func(t *testing.T) {
		mem := NewMemoryStore(nil)
		svc := newTestService(t, mem, Config{TTL: testTTL})
		grant, err := svc.Acquire(t.Context(), "", "")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		refused := errors.New("the cluster records another layout")
		_, err = NewSession(t.Context(), SessionConfig{Service: svc, Lease: &grant,
			CheckLayout: func(context.Context, string) error { return refused }})
		if !errors.Is(err, refused) {
			t.Fatalf("NewSession with another layout = %v, want %v", err, refused)
		}
		if row := mustLease(t, mem, grant.WorkerID); !row.released {
			t.Errorf("the wrapped grant refused for its layout was not given back: %+v", row)
		}
	})
}

// TestNewSessionWrapInvalid: a wrapped grant the Service would not renew,
// or of another cluster than Cluster, is a config error; a Keeper, which
// acquires its own leases, refuses any.
func TestNewSessionWrapInvalid(t *testing.T) {
	svc := newTestService(t, NewMemoryStore(nil), Config{TTL: testTTL, MaxWorkerID: 3})
	grant, err := svc.Acquire(t.Context(), "", "")
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	with := func(f func(l *Lease)) *Lease {
		l := grant
		f(&l)
		return &l
	}
	tests := []struct {
		name string
		cfg  SessionConfig
	}{
		{"worker ID out of range", SessionConfig{Service: svc, Lease: with(func(l *Lease) { l.WorkerID = 4 })}},
		{"token malformed", SessionConfig{Service: svc, Lease: with(func(l *Lease) { l.Token = "short" })}},
		{"cluster invalid", SessionConfig{Service: svc, Lease: with(func(l *Lease) { l.Cluster = "no spaces" })}},
		{"cluster not Cluster", SessionConfig{Service: svc, Cluster: "other", Lease: &grant}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := NewSession(t.Context(), tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewSession() = %v, %v, want error %v", s, err, ErrInvalidConfig)
			}
		})
	}
	if _, err := NewKeeper(SessionConfig{Service: svc, Lease: &grant}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewKeeper() with a Lease: error = %v, want %v", err, ErrInvalidConfig)
	}
	// Cluster naming the grant's own, or "" for the default, is fine.
	for _, cluster := range []string{"", grant.Cluster} {
		noCluster := with(func(l *Lease) { l.Cluster = "" })
		s, err := NewSession(t.Context(), SessionConfig{Service: svc, Cluster: cluster, Lease: noCluster})
		if err != nil {
			t.Fatalf("NewSession(Cluster %q) on a grant without a cluster: %v", cluster, err)
		}
		if got := s.Lease().Cluster; got != svc.Cluster() {
			t.Errorf("Lease().Cluster = %q, want the default %q", got, svc.Cluster())
		}
		closeSession(t, s, 0)
		if grant, err = svc.Acquire(t.Context(), "", ""); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
	}
}
