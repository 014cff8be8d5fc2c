package workerlease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestNewSessionInvalid(t *testing.T) {
	svc := newTestService(t, NewMemoryStore(nil), Config{TTL: testTTL})
	tests := []struct {
		name string
		cfg  SessionConfig
	}{
		{"nil service", SessionConfig{}},
		{"negative margin", SessionConfig{Service: svc, Margin: -time.Second}},
		{"margin of half the TTL", SessionConfig{Service: svc, Margin: testTTL / 2}},
		{"negative retry", SessionConfig{Service: svc, RetryInterval: -time.Second}},
		{"negative clock skew", SessionConfig{Service: svc, ClockSkew: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := NewSession(t.Context(), tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewSession() = %v, %v, want error %v", s, err, ErrInvalidConfig)
			}
			if _, err := NewKeeper(tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewKeeper() error = %v, want %v", err, ErrInvalidConfig)
			}
		})
	}
}

// TestSessionFence follows the fence of one session: NewSession does not
// return before the first renewal has stored a reservation; the fence then
// lets through IDs up to that reservation and no further, and closes at the
// local deadline while a renewal stalls, before the store's own expiry.
func TestSessionFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		mem := NewMemoryStore(nil)
		renewals := newCalls()
		gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
		fs := &faultStore{Store: mem}
		fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			if n := renewals.add(last); n <= len(gates) {
				select {
				case <-gates[n-1]:
				case <-ctx.Done():
					return Lease{}, ctx.Err()
				}
			}
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		svc := newTestService(t, fs, Config{TTL: testTTL})
		type result struct {
			s   *Session
			err error
		}
		made := make(chan result, 1)
		go func() {
			s, err := NewSession(context.Background(), SessionConfig{Service: svc})
			made <- result{s, err}
		}()
		synctest.Wait()
		select {
		case r := <-made:
			t.Fatalf("NewSession returned before its first renewal: %v, %v", r.s, r.err)
		default:
		}
		if row := mustLease(t, mem, 0); row.lastTimestampMS != 0 {
			t.Errorf("last_timestamp_ms before the first renewal = %d, want 0", row.lastTimestampMS)
		}

		close(gates[0])
		r := <-made
		if r.err != nil {
			t.Fatalf("NewSession: %v", r.err)
		}
		s := r.s
		if !fenceNow(s) {
			t.Errorf("Fence() after the first renewal = false, want true")
		}
		if got := s.Lease().LastTimestampMS; got != 0 {
			t.Errorf("Lease().LastTimestampMS = %d, want 0: no earlier holder", got)
		}
		reserve := start.Add(testTTL).UnixMilli()
		if l, ok := s.Renewed(); !ok || l.Token != s.Lease().Token || l.LastTimestampMS != reserve {
			t.Errorf("Renewed() = %+v, %v, want the lease with LastTimestampMS %d", l, ok, reserve)
		}
		now := time.Now()
		if !s.Fence(now, reserve) {
			t.Errorf("Fence(now, reservation) = false, want true")
		}
		if s.Fence(now, reserve+1) {
			t.Errorf("Fence(now, reservation+1) = true, want false")
		}
		if got, want := s.SecondsLeft(now), 27.0; got != want {
			t.Errorf("SecondsLeft() = %v, want %v", got, want)
		}

		// The renewal sent at 10s stalls. The fence must close at
		// 0 + TTL - Margin = 27s, while the store still holds the lease.
		time.Sleep(27*time.Second - time.Nanosecond)
		if !fenceNow(s) {
			t.Errorf("Fence() just before the local deadline = false, want true")
		}
		if got, want := s.SecondsLeft(time.Now()), 1e-9; got != want {
			t.Errorf("SecondsLeft() just before the local deadline = %v, want %v", got, want)
		}
		time.Sleep(time.Nanosecond)
		if fenceNow(s) {
			t.Errorf("Fence() at the local deadline = true, want false")
		}
		if got := s.SecondsLeft(time.Now()); got != 0 {
			t.Errorf("SecondsLeft() at the deadline = %v, want 0", got)
		}
		if row := mustLease(t, mem, s.Lease().WorkerID); !row.live(mem.now()) {
			t.Errorf("store expired the lease (at %v) before the holder's fence closed", row.expiresAt)
		}
		closeSession(t, s, 0)
	})
}

// TestSessionHandsOverTheReservation: Close releases with the caller's last
// timestamp, and the next holder's Lease carries it as its floor.
func TestSessionHandsOverTheReservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		releases := newCalls()
		fs := &faultStore{Store: mem}
		countReleases(fs, mem, releases)
		s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{})
		time.Sleep(5 * time.Second)
		final := time.Now().Add(time.Hour).UnixMilli() // above the reservation
		if err := s.Close(context.Background(), final); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if !isClosed(s.Done()) || fenceNow(s) {
			t.Errorf("session open after Close")
		}
		if err := s.Err(); !errors.Is(err, ErrSessionClosed) {
			t.Errorf("Err() after Close = %v, want %v", err, ErrSessionClosed)
		}
		row := mustLease(t, mem, 0)
		if !row.released || row.lastTimestampMS != final {
			t.Errorf("row after Close: released %v, last_timestamp_ms %d; want released, %d", row.released, row.lastTimestampMS, final)
		}
		if err := s.Close(context.Background(), final+1); err != nil {
			t.Errorf("second Close() = %v, want nil", err)
		}
		if got := releases.count(); got != 1 {
			t.Errorf("releases = %d, want 1: Close is idempotent", got)
		}

		// The store prefers IDs reserved no further than the caller's clock,
		// so the next holder's runs past final to be offered worker ID 0.
		ahead := func() time.Time { return time.Now().Add(2 * time.Hour) }
		next := mustSession(t, mem, Config{TTL: testTTL, Now: ahead}, SessionConfig{Now: ahead})
		if got := next.Lease(); got.WorkerID != 0 || got.LastTimestampMS != final {
			t.Errorf("next Lease() = worker ID %d, LastTimestampMS %d; want 0, %d", got.WorkerID, got.LastTimestampMS, final)
		}
		closeSession(t, next, 0)
	})
}

func TestSessionCloseStoreUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		down := errors.New("connection refused")
		releases := newCalls()
		fs := &faultStore{Store: mem}
		fs.ReleaseFunc = func(context.Context, string, int64, string, int64) error { releases.add(0); return down }
		s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{})
		err := s.Close(context.Background(), 0)
		if !errors.Is(err, down) || !errors.Is(err, ErrUnavailable) {
			t.Errorf("Close() = %v, want %v wrapped in %v", err, down, ErrUnavailable)
		}
		if fenceNow(s) {
			t.Errorf("Fence() after a failed Close = true, want false")
		}
		if again := s.Close(context.Background(), 0); again != err {
			t.Errorf("second Close() = %v, want the first's %v", again, err)
		}
		if got := releases.count(); got != 1 {
			t.Errorf("release attempts = %d, want 1", got)
		}
	})
}

// TestSessionAbandon: for a store known to be gone, Abandon ends the session
// without a store call; the store keeps the lease until its TTL runs out.
func TestSessionAbandon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		renewals, releases := newCalls(), newCalls()
		fs := &faultStore{Store: mem}
		fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			renewals.add(last)
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		countReleases(fs, mem, releases)
		s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{})
		time.Sleep(12 * time.Second) // renewed at 0s and 10s
		s.Abandon()
		if !isClosed(s.Done()) || fenceNow(s) {
			t.Errorf("session open after Abandon")
		}
		if err := s.Err(); !errors.Is(err, ErrSessionClosed) {
			t.Errorf("Err() after Abandon = %v, want %v", err, ErrSessionClosed)
		}
		if err := s.Close(context.Background(), 0); err != nil {
			t.Errorf("Close() after Abandon = %v, want nil", err)
		}
		time.Sleep(40*time.Second - time.Nanosecond - 12*time.Second)
		if row := mustLease(t, mem, 0); !row.live(mem.now()) || row.released {
			t.Errorf("abandoned lease gone before its TTL from the last renewal (10s + 30s)")
		}
		time.Sleep(time.Nanosecond)
		if row := mustLease(t, mem, 0); row.live(mem.now()) {
			t.Errorf("abandoned lease still live after its TTL")
		}
		if got := renewals.count(); got != 2 {
			t.Errorf("renewals = %d, want 2: none after Abandon", got)
		}
		if got := releases.count(); got != 0 {
			t.Errorf("releases = %d, want 0", got)
		}
	})
}

// TestSessionGiveUp: GiveUp closes the fence before it returns and never
// waits for the store; the session's goroutine releases the lease with its
// reservation, and Close afterwards releases nothing more.
func TestSessionGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		mem := NewMemoryStore(nil)
		releases := newCalls()
		gate := make(chan struct{})
		fs := &faultStore{Store: mem}
		fs.ReleaseFunc = func(ctx context.Context, c string, id int64, tok string, last int64) error {
			releases.add(last)
			<-gate // a slow store must not hold GiveUp's caller
			return mem.Release(ctx, c, id, tok, last)
		}
		s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{})
		time.Sleep(5 * time.Second)
		s.GiveUp()
		if fenceNow(s) {
			t.Errorf("Fence() right after GiveUp = true, want false")
		}
		if !isClosed(s.Done()) {
			t.Errorf("Done() not closed by GiveUp")
		}
		if err := s.Err(); !errors.Is(err, ErrSessionClosed) {
			t.Errorf("Err() after GiveUp = %v, want %v", err, ErrSessionClosed)
		}
		s.GiveUp() // again: no panic, no second release
		synctest.Wait()
		close(gate)
		synctest.Wait()
		reserve := start.Add(testTTL).UnixMilli() // the renewal at 0s
		if got := releases.lasts(); len(got) != 1 || got[0] != reserve {
			t.Errorf("releases with %v, want one with the reservation %d", got, reserve)
		}
		if row := mustLease(t, mem, 0); !row.released {
			t.Errorf("given-up lease not released")
		}
		if err := s.Close(context.Background(), reserve+1000); err != nil {
			t.Errorf("Close() after GiveUp = %v, want nil", err)
		}
		if got := releases.count(); got != 1 {
			t.Errorf("releases = %d, want 1", got)
		}
	})
}

func TestNewSessionErrors(t *testing.T) {
	down := errors.New("connection refused")
	tests := []struct {
		name        string
		acquire     error // returned by Acquire, if not nil
		renew       error // returned by every Renew, if not nil
		want        error
		wantRelease bool // the grant was given back
	}{
		{"every worker ID held", ErrNoWorkerID, nil, ErrNoWorkerID, false},
		{"store unreachable", down, nil, ErrUnavailable, false},
		{"first renewal refused", nil, ErrLeaseExpired, ErrLeaseLost, true},
		{"first renewal fails until the deadline", nil, down, ErrLeaseLost, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := NewMemoryStore(nil)
				fs := &faultStore{Store: mem}
				if tt.acquire != nil {
					fs.AcquireFunc = func(context.Context, AcquireRequest) (Lease, error) { return Lease{}, tt.acquire }
				}
				if tt.renew != nil {
					fs.RenewFunc = func(context.Context, string, int64, string, time.Duration, int64) (Lease, error) {
						return Lease{}, tt.renew
					}
				}
				svc := newTestService(t, fs, Config{TTL: testTTL})
				s, err := NewSession(t.Context(), SessionConfig{Service: svc})
				if !errors.Is(err, tt.want) || s != nil {
					t.Fatalf("NewSession() = %v, %v, want error %v", s, err, tt.want)
				}
				if tt.wantRelease {
					if row := mustLease(t, mem, 0); !row.released {
						t.Errorf("grant not released")
					}
				}
			})
		})
	}
}

// TestNewSessionContextEnds: ctx ending while the first renewal is in flight
// returns ctx's error and gives the grant back rather than leave it to its
// TTL.
func TestNewSessionContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		fs := &faultStore{Store: mem}
		fs.RenewFunc = func(ctx context.Context, _ string, _ int64, _ string, _ time.Duration, _ int64) (Lease, error) {
			<-ctx.Done()
			return Lease{}, ctx.Err()
		}
		svc := newTestService(t, fs, Config{TTL: testTTL})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := NewSession(ctx, SessionConfig{Service: svc})
			errc <- err
		}()
		time.Sleep(5 * time.Second)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("NewSession() error = %v, want %v", err, context.Canceled)
		}
		if row := mustLease(t, mem, 0); !row.released {
			t.Errorf("grant not released when NewSession's context ended")
		}
	})
}
