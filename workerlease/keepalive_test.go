package workerlease

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestKeeperRenewsEveryThirdOfTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		mem := NewMemoryStore(nil)
		var mu sync.Mutex
		var at []time.Duration
		var reserves []int64
		fs := &faultStore{Store: mem}
		fs.renew = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			mu.Lock()
			at = append(at, time.Since(start))
			reserves = append(reserves, last)
			mu.Unlock()
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		r := newKeeperRig(t, fs, Config{TTL: testTTL}, KeeperConfig{})
		r.k.Start(t.Context())
		time.Sleep(65 * time.Second)
		synctest.Wait()
		closeKeeper(t, r.k, 0)

		mu.Lock()
		defer mu.Unlock()
		var wantAt []time.Duration
		var wantReserves []int64
		for d := time.Duration(0); d <= 60*time.Second; d += 10 * time.Second {
			wantAt = append(wantAt, d)
			wantReserves = append(wantReserves, start.Add(d+testTTL).UnixMilli())
		}
		if !slices.Equal(at, wantAt) {
			t.Errorf("renewals at %v, want %v", at, wantAt)
		}
		if !slices.Equal(reserves, wantReserves) {
			t.Errorf("reservations %v, want %v", reserves, wantReserves)
		}
		if got := len(r.announced()); got != 1 {
			t.Errorf("OnLease called %d times, want 1", got)
		}
	})
}

func TestKeeperLossAndReacquire(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantLoss time.Duration
	}{
		{"store unreachable until the local deadline", errors.New("connection refused"), 27 * time.Second},
		{"token mismatch", ErrTokenMismatch, 10 * time.Second},
		{"lease expired", ErrLeaseExpired, 10 * time.Second},
		{"not assigned", ErrNotAssigned, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				mem := NewMemoryStore(nil)
				var first atomic.Pointer[string]
				fs := &faultStore{Store: mem}
				fs.renew = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
					first.CompareAndSwap(nil, &tok)
					if tok == *first.Load() && time.Since(start) > 0 {
						return Lease{}, tt.err
					}
					return mem.Renew(ctx, c, id, tok, ttl, last)
				}
				r := newKeeperRig(t, fs, Config{TTL: testTTL, MaxWorkerID: 1}, KeeperConfig{})
				lost := r.k.Lost()
				r.k.Start(t.Context())
				synctest.Wait()
				if isClosed(lost) {
					t.Fatalf("Lost() closed before any loss")
				}

				time.Sleep(tt.wantLoss - time.Nanosecond)
				synctest.Wait()
				if isClosed(lost) {
					t.Errorf("Lost() closed before %v", tt.wantLoss)
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if !isClosed(lost) {
					t.Errorf("Lost() not closed at %v", tt.wantLoss)
				}
				// Worker ID 0 is live in the store until 30s: the new lease
				// takes 1, and the fence is open again under it.
				got := r.announced()
				if len(got) != 2 || got[0].WorkerID != 0 || got[1].WorkerID != 1 {
					t.Fatalf("OnLease got %+v, want worker IDs 0 then 1", got)
				}
				if l, ok := r.k.Lease(); !ok || l.Token != got[1].Token {
					t.Errorf("Lease() = %+v, %v, want the second lease", l, ok)
				}
				now := time.Now()
				if !r.k.Allow(now, now.UnixMilli()) {
					t.Errorf("Allow() under the new lease = false, want true")
				}
				if r.k.Fence(got[0])(now, now.UnixMilli()) {
					t.Errorf("Fence(lost lease)() = true, want false")
				}
				if isClosed(r.k.Lost()) {
					t.Errorf("Lost() after re-acquiring is closed, want a fresh channel")
				}
				closeKeeper(t, r.k, 0)
			})
		})
	}
}

// secs returns the durations v seconds.
func secs(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Second))
	}
	return out
}

// Retry waits are jittered: half the wait fixed, half drawn by randN. The
// draws are fixed here at either end, so the tests depend on neither chance
// nor timing (virtual time).
var jitterDraws = []struct {
	name  string
	randN func(n time.Duration) time.Duration
}{
	{"lowest draw", func(time.Duration) time.Duration { return 0 }},
	{"highest draw", func(n time.Duration) time.Duration { return n - 1 }},
}

func TestKeeperAcquireBackoff(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"no worker ID", ErrNoWorkerID},
		{"store unreachable", errors.New("connection refused")},
	}
	// 1s doubling, capped at the TTL; each wait from half to all of it.
	want := map[string][]time.Duration{
		"lowest draw":  secs(0, 0.5, 1.5, 3.5, 7.5, 15.5, 30.5, 45.5),
		"highest draw": secs(0, 1, 3, 7, 15, 31, 61, 91),
	}
	for _, tt := range tests {
		for _, draw := range jitterDraws {
			t.Run(tt.name+", "+draw.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					start := time.Now()
					mem := NewMemoryStore(nil)
					var mu sync.Mutex
					var at []time.Duration
					fs := &faultStore{Store: mem}
					fs.acquire = func(ctx context.Context, req AcquireRequest) (Lease, error) {
						mu.Lock()
						defer mu.Unlock()
						at = append(at, time.Since(start))
						if len(at) < 8 {
							return Lease{}, tt.err
						}
						return mem.Acquire(ctx, req)
					}
					r := newKeeperRig(t, fs, Config{TTL: testTTL}, KeeperConfig{})
					r.k.randN = draw.randN
					r.k.Start(t.Context())
					time.Sleep(100 * time.Second)
					synctest.Wait()
					closeKeeper(t, r.k, 0)

					mu.Lock()
					defer mu.Unlock()
					if !slices.Equal(at, want[draw.name]) {
						t.Errorf("acquisitions at %v, want %v", at, want[draw.name])
					}
					if got := len(r.announced()); got != 1 {
						t.Errorf("OnLease called %d times, want 1", got)
					}
				})
			})
		}
	}
}

// TestKeeperRenewRetriesAreJittered: a failed renewal is retried after half
// to all of RetryInterval (1s), not after exactly 1s on every instance.
func TestKeeperRenewRetriesAreJittered(t *testing.T) {
	want := map[string][]time.Duration{
		"lowest draw":  secs(0, 10, 10.5, 11, 11.5),
		"highest draw": secs(0, 10, 11, 12, 13),
	}
	for _, draw := range jitterDraws {
		t.Run(draw.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				mem := NewMemoryStore(nil)
				var mu sync.Mutex
				var at []time.Duration
				fs := &faultStore{Store: mem}
				fs.renew = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
					mu.Lock()
					defer mu.Unlock()
					at = append(at, time.Since(start))
					if len(at) > 1 {
						return Lease{}, errors.New("connection refused")
					}
					return mem.Renew(ctx, c, id, tok, ttl, last)
				}
				r := newKeeperRig(t, fs, Config{TTL: testTTL}, KeeperConfig{})
				r.k.randN = draw.randN
				r.k.Start(t.Context())
				time.Sleep(13500 * time.Millisecond)
				synctest.Wait()
				closeKeeper(t, r.k, 0)

				mu.Lock()
				defer mu.Unlock()
				if got := at[:min(len(at), 5)]; !slices.Equal(got, want[draw.name]) {
					t.Errorf("renewals at %v, want %v first", at, want[draw.name])
				}
			})
		})
	}
}

func TestKeeperGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		r := newKeeperRig(t, mem, Config{TTL: testTTL, MaxWorkerID: 1}, KeeperConfig{})
		k := r.k
		k.Start(t.Context())
		synctest.Wait()
		first, ok := k.Lease()
		if !ok {
			t.Fatalf("no lease")
		}
		lost := k.Lost()

		time.Sleep(5 * time.Second)
		k.GiveUp(Lease{Token: "stale-token-of-earlier"})
		now := time.Now()
		if !k.Allow(now, now.UnixMilli()) || isClosed(lost) {
			t.Errorf("GiveUp(another lease) revoked the held lease")
		}
		k.GiveUp(first)
		// The fence closes in GiveUp itself, not later on the keeper goroutine.
		if k.Allow(now, now.UnixMilli()) {
			t.Errorf("Allow() right after GiveUp = true, want false")
		}
		if !isClosed(lost) {
			t.Errorf("Lost() not closed by GiveUp")
		}
		synctest.Wait()
		if row := mustLease(t, mem, first.WorkerID); !row.released {
			t.Errorf("given-up lease not released")
		}

		time.Sleep(time.Second) // RetryInterval
		synctest.Wait()
		second, ok := k.Lease()
		if !ok {
			t.Fatalf("no lease after GiveUp and RetryInterval")
		}
		// Worker ID 0 is reserved 30s ahead of this clock now, so 1 is preferred.
		if got, want := second.WorkerID, int64(1); got != want {
			t.Errorf("re-acquired worker ID = %d, want %d", got, want)
		}
		closeKeeper(t, k, 0)
	})
}
