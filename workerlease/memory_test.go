package workerlease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// manualClock is a clock that moves only when told to.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newManualClock() *manualClock {
	return &manualClock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestMemoryStoreConcurrentAcquire(t *testing.T) {
	const (
		callers = 200
		ids     = 64
	)
	s := newTestService(t, NewMemoryStore(nil), Config{MaxWorkerID: ids - 1})
	type result struct {
		lease Lease
		err   error
	}
	results := make(chan result, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-start
			l, err := s.Acquire(context.Background(), "", "")
			results <- result{l, err}
		})
	}
	close(start)
	wg.Wait()
	close(results)

	holders := make(map[int64]string)
	refused := 0
	for r := range results {
		switch {
		case r.err == nil:
			if tok, dup := holders[r.lease.WorkerID]; dup {
				t.Errorf("worker ID %d granted to %q and %q", r.lease.WorkerID, tok, r.lease.Token)
			}
			holders[r.lease.WorkerID] = r.lease.Token
		case errors.Is(r.err, ErrNoWorkerID):
			refused++
		default:
			t.Errorf("Acquire() error = %v, want nil or %v", r.err, ErrNoWorkerID)
		}
	}
	if got, want := len(holders), ids; got != want {
		t.Errorf("granted %d worker IDs, want %d", got, want)
	}
	if got, want := refused, callers-ids; got != want {
		t.Errorf("refused %d callers, want %d", got, want)
	}
	for id := range holders {
		if id < 0 || id >= ids {
			t.Errorf("granted worker ID %d, want within [0, %d]", id, ids-1)
		}
	}
}

func TestMemoryStoreSemantics(t *testing.T) {
	const ttl = 10 * time.Second
	ctx := context.Background()
	type env struct {
		clock *manualClock
		store *MemoryStore
		svc   *Service
	}
	acquire := func(t *testing.T, e env) Lease {
		t.Helper()
		l, err := e.svc.Acquire(ctx, "", "")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		return l
	}
	tests := []struct {
		name string
		run  func(t *testing.T, e env)
	}{
		{"lowest free ID first, fresh lease", func(t *testing.T, e env) {
			a, b := acquire(t, e), acquire(t, e)
			if a.WorkerID != 0 || b.WorkerID != 1 {
				t.Errorf("worker IDs = %d, %d, want 0, 1", a.WorkerID, b.WorkerID)
			}
			if got, want := a.ExpiresAt, e.clock.Now().Add(ttl); !got.Equal(want) {
				t.Errorf("ExpiresAt = %v, want %v", got, want)
			}
			if got := a.LastTimestampMS; got != 0 {
				t.Errorf("LastTimestampMS = %d, want 0", got)
			}
		}},
		{"renew extends from the store's now", func(t *testing.T, e env) {
			a := acquire(t, e)
			e.clock.Advance(ttl - time.Millisecond)
			l, err := e.svc.Renew(ctx, "", a.WorkerID, a.Token, 0)
			if err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if got, want := l.ExpiresAt, e.clock.Now().Add(ttl); !got.Equal(want) {
				t.Errorf("ExpiresAt = %v, want %v", got, want)
			}
		}},
		{"expired lease cannot be renewed even if free", func(t *testing.T, e env) {
			a := acquire(t, e)
			e.clock.Advance(ttl)
			_, err := e.svc.Renew(ctx, "", a.WorkerID, a.Token, 0)
			if !errors.Is(err, ErrLeaseExpired) {
				t.Errorf("Renew() error = %v, want %v", err, ErrLeaseExpired)
			}
			if err := e.svc.Release(ctx, "", a.WorkerID, a.Token, 0); !errors.Is(err, ErrLeaseExpired) {
				t.Errorf("Release() error = %v, want %v", err, ErrLeaseExpired)
			}
		}},
		{"expired lease taken over; old token refused", func(t *testing.T, e env) {
			a := acquire(t, e)
			acquire(t, e) // worker 1 stays live, so the takeover must reuse 0
			e.clock.Advance(ttl / 2)
			if _, err := e.svc.Renew(ctx, "", 1, mustLease(t, e.store, 1).token, 0); err != nil {
				t.Fatalf("Renew worker 1: %v", err)
			}
			e.clock.Advance(ttl / 2)
			b := acquire(t, e)
			if got, want := b.WorkerID, a.WorkerID; got != want {
				t.Fatalf("takeover worker ID = %d, want %d", got, want)
			}
			if _, err := e.svc.Renew(ctx, "", a.WorkerID, a.Token, 0); !errors.Is(err, ErrTokenMismatch) && !errors.Is(err, ErrLeaseExpired) {
				t.Errorf("old token Renew() error = %v, want %v or %v", err, ErrTokenMismatch, ErrLeaseExpired)
			}
			if err := e.svc.Release(ctx, "", a.WorkerID, a.Token, 0); err == nil {
				t.Errorf("old token Release() error = nil, want an error")
			}
			if _, err := e.svc.Renew(ctx, "", b.WorkerID, b.Token, 0); err != nil {
				t.Errorf("new holder Renew() error = %v, want nil", err)
			}
		}},
		{"release with a wrong token never frees the ID", func(t *testing.T, e env) {
			a := acquire(t, e)
			other := "BBBBBBBBBBBBBBBBBBBBBB"
			if err := e.svc.Release(ctx, "", a.WorkerID, other, 0); !errors.Is(err, ErrTokenMismatch) {
				t.Errorf("Release() error = %v, want %v", err, ErrTokenMismatch)
			}
			if _, err := e.svc.Renew(ctx, "", a.WorkerID, a.Token, 0); err != nil {
				t.Errorf("holder Renew() after foreign release error = %v, want nil", err)
			}
			if b := acquire(t, e); b.WorkerID == a.WorkerID {
				t.Errorf("worker ID %d granted twice", b.WorkerID)
			}
		}},
		{"released ID is free again and keeps its timestamp", func(t *testing.T, e env) {
			a := acquire(t, e)
			if err := e.svc.Release(ctx, "", a.WorkerID, a.Token, 42); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if _, err := e.svc.Renew(ctx, "", a.WorkerID, a.Token, 0); !errors.Is(err, ErrNotAssigned) {
				t.Errorf("Renew() after release error = %v, want %v", err, ErrNotAssigned)
			}
			if err := e.svc.Release(ctx, "", a.WorkerID, a.Token, 0); !errors.Is(err, ErrNotAssigned) {
				t.Errorf("second Release() error = %v, want %v", err, ErrNotAssigned)
			}
			b := acquire(t, e)
			if got, want := b.WorkerID, a.WorkerID; got != want {
				t.Errorf("worker ID = %d, want %d", got, want)
			}
			if got, want := b.LastTimestampMS, int64(42); got != want {
				t.Errorf("LastTimestampMS = %d, want %d", got, want)
			}
		}},
		{"last_timestamp_ms never decreases", func(t *testing.T, e env) {
			a := acquire(t, e)
			for i, tc := range []struct{ send, want int64 }{{100, 100}, {50, 100}, {0, 100}, {101, 101}} {
				l, err := e.svc.Renew(ctx, "", a.WorkerID, a.Token, tc.send)
				if err != nil {
					t.Fatalf("Renew #%d: %v", i, err)
				}
				if got := l.LastTimestampMS; got != tc.want {
					t.Errorf("Renew #%d(%d): LastTimestampMS = %d, want %d", i, tc.send, got, tc.want)
				}
			}
			if err := e.svc.Release(ctx, "", a.WorkerID, a.Token, 7); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if got, want := acquire(t, e).LastTimestampMS, int64(101); got != want {
				t.Errorf("LastTimestampMS after release = %d, want %d", got, want)
			}
		}},
		{"prefers IDs not reserved beyond the caller's clock", func(t *testing.T, e env) {
			a := acquire(t, e)
			future := e.clock.Now().Add(time.Hour).UnixMilli()
			if err := e.svc.Release(ctx, "", a.WorkerID, a.Token, future); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if got, want := acquire(t, e).WorkerID, int64(1); got != want {
				t.Errorf("worker ID = %d, want %d (0 is reserved ahead)", got, want)
			}
			acquire(t, e) // 2
			acquire(t, e) // 3, the last
			b := acquire(t, e)
			if got, want := b.WorkerID, int64(0); got != want {
				t.Errorf("last resort worker ID = %d, want %d", got, want)
			}
			if got, want := b.LastTimestampMS, future; got != want {
				t.Errorf("LastTimestampMS = %d, want %d", got, want)
			}
			if _, err := e.svc.Acquire(ctx, "", ""); !errors.Is(err, ErrNoWorkerID) {
				t.Errorf("Acquire() on a full cluster error = %v, want %v", err, ErrNoWorkerID)
			}
		}},
		{"clusters are separate", func(t *testing.T, e env) {
			a := acquire(t, e)
			b, err := e.svc.Acquire(ctx, "other", "")
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if a.WorkerID != b.WorkerID || b.Cluster != "other" {
				t.Errorf("other cluster lease = %d in %q, want %d in %q", b.WorkerID, b.Cluster, a.WorkerID, "other")
			}
			if _, err := e.svc.Renew(ctx, "other", a.WorkerID, a.Token, 0); !errors.Is(err, ErrTokenMismatch) {
				t.Errorf("cross-cluster Renew() error = %v, want %v", err, ErrTokenMismatch)
			}
		}},
		{"cancelled context", func(t *testing.T, e env) {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := e.svc.Acquire(cctx, "", ""); !errors.Is(err, context.Canceled) {
				t.Errorf("Acquire() error = %v, want %v", err, context.Canceled)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newManualClock()
			m := NewMemoryStore(c.Now)
			tt.run(t, env{c, m, newTestService(t, m, Config{MaxWorkerID: 3, TTL: ttl, Now: c.Now})})
		})
	}
}

// mustLease returns the row of worker ID id in the default cluster.
func mustLease(tb testing.TB, m *MemoryStore, id int64) memRow {
	tb.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[memKey{DefaultCluster, id}]
	if r == nil {
		tb.Fatalf("no row for worker ID %d", id)
	}
	return *r
}
