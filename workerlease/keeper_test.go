package workerlease

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestKeeperAcquireBackoff(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"no worker ID", ErrNoWorkerID},
		{"store unreachable", errors.New("connection refused")},
	}
	// RetryInterval (1s) doubling, capped at the TTL; each wait from half to
	// all of it.
	want := map[string][]time.Duration{
		"lowest draw":  secs(0, 0.5, 1.5, 3.5, 7.5, 15.5, 30.5, 45.5),
		"highest draw": secs(0, 1, 3, 7, 15, 31, 61, 91),
	}
	for _, tt := range tests {
		for _, draw := range jitterDraws {
			t.Run(tt.name+", "+draw.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					mem := NewMemoryStore(nil)
					acquisitions := newCalls()
					fs := &faultStore{Store: mem}
					fs.AcquireFunc = func(ctx context.Context, req AcquireRequest) (Lease, error) {
						if acquisitions.add(0) < 8 {
							return Lease{}, tt.err
						}
						return mem.Acquire(ctx, req)
					}
					k := mustKeeper(t, fs, Config{TTL: testTTL}, KeeperConfig{randN: draw.randN})
					k.Start(t.Context())
					synctest.Wait()
					if got, want := k.NoFreeWorkerID(), errors.Is(tt.err, ErrNoWorkerID); got != want {
						t.Errorf("NoFreeWorkerID() after a failed acquisition = %v, want %v", got, want)
					}
					if k.Session() != nil {
						t.Errorf("Session() before any acquisition succeeded = non-nil, want nil")
					}
					time.Sleep(100 * time.Second)
					synctest.Wait()
					if got := acquisitions.times(); !slices.Equal(got, want[draw.name]) {
						t.Errorf("acquisitions at %v, want %v", got, want[draw.name])
					}
					if k.NoFreeWorkerID() {
						t.Errorf("NoFreeWorkerID() after an acquisition succeeded = true, want false")
					}
					if s := k.Session(); s == nil || !fenceNow(s) {
						t.Errorf("no open session after the acquisition succeeded")
					}
					closeKeeper(t, k, 0)
				})
			})
		}
	}
}

// TestKeeperReacquiresAfterLoss: when a session is lost the keeper starts
// the next at once; worker ID 0 is still live in the store, so the next
// session gets 1, and only its fence is open.
func TestKeeperReacquiresAfterLoss(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantLoss time.Duration
	}{
		{"store unreachable until the local deadline", errors.New("connection refused"), 27 * time.Second},
		{"renewal refused", ErrTokenMismatch, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				mem := NewMemoryStore(nil)
				var first atomic.Pointer[string]
				fs := &faultStore{Store: mem}
				fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
					first.CompareAndSwap(nil, &tok)
					if tok == *first.Load() && time.Since(start) > 0 {
						return Lease{}, tt.err
					}
					return mem.Renew(ctx, c, id, tok, ttl, last)
				}
				k := mustKeeper(t, fs, Config{TTL: testTTL, MaxWorkerID: 1}, KeeperConfig{})
				k.Start(t.Context())
				synctest.Wait()
				s1 := k.Session()
				if s1 == nil || s1.Lease().WorkerID != 0 {
					t.Fatalf("first session = %v, want one on worker ID 0", s1)
				}
				if got, want := k.SecondsLeft(time.Now()), 27.0; got != want {
					t.Errorf("SecondsLeft() = %v, want %v", got, want)
				}

				time.Sleep(tt.wantLoss - time.Nanosecond)
				synctest.Wait()
				if k.Session() != s1 || isClosed(s1.Done()) {
					t.Fatalf("first session ended before %v", tt.wantLoss)
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if !isClosed(s1.Done()) || fenceNow(s1) {
					t.Errorf("first session open at %v", tt.wantLoss)
				}
				s2 := k.Session()
				if s2 == s1 || s2 == nil || s2.Lease().WorkerID != 1 {
					t.Fatalf("session after the loss = %v, want a new one on worker ID 1", s2)
				}
				if !fenceNow(s2) {
					t.Errorf("Fence() of the new session = false, want true")
				}
				if l, ok := k.Lease(); !ok || l.Token != s2.Lease().Token {
					t.Errorf("Lease() = %+v, %v, want the new session's", l, ok)
				}
				closeKeeper(t, k, 0)
			})
		})
	}
}

// TestKeeperPacesAfterGiveUp: a generator that gave its session up would
// likely give the next up too if it came at once, so the keeper waits
// RetryInterval before acquiring again.
func TestKeeperPacesAfterGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		acquisitions := newCalls()
		fs := &faultStore{Store: mem}
		fs.AcquireFunc = func(ctx context.Context, req AcquireRequest) (Lease, error) {
			acquisitions.add(0)
			return mem.Acquire(ctx, req)
		}
		k := mustKeeper(t, fs, Config{TTL: testTTL, MaxWorkerID: 1}, KeeperConfig{})
		k.Start(t.Context())
		synctest.Wait()
		s1 := k.Session()
		time.Sleep(5 * time.Second)
		s1.GiveUp()
		synctest.Wait()
		if row := mustLease(t, mem, s1.Lease().WorkerID); !row.released {
			t.Errorf("given-up lease not released")
		}
		if _, ok := k.Lease(); ok {
			t.Errorf("Lease() after GiveUp: held, want none until the next session")
		}
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		if got := acquisitions.count(); got != 1 {
			t.Errorf("acquisitions within RetryInterval of GiveUp = %d, want 1", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got, want := acquisitions.times(), secs(0, 6); !slices.Equal(got, want) {
			t.Errorf("acquisitions at %v, want %v", got, want)
		}
		// Worker ID 0 is reserved 30s ahead of this clock now, so 1 is preferred.
		if s2 := k.Session(); s2 == s1 || s2.Lease().WorkerID != 1 {
			t.Errorf("session after GiveUp on worker ID %d, want a new one on 1", s2.Lease().WorkerID)
		}
		closeKeeper(t, k, 0)
	})
}

// TestKeeperNoFreeWorkerID: while every worker ID is held the keeper says so
// (a generator then answers "no worker ID", not "retry"), and takes the
// first one freed.
func TestKeeperNoFreeWorkerID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		cfg := Config{TTL: testTTL, MaxWorkerID: 1}
		other := newTestService(t, mem, cfg)
		var held []Lease
		for range 2 {
			l, err := other.Acquire(t.Context(), "", "other")
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, l)
		}
		k := mustKeeper(t, mem, cfg, KeeperConfig{})
		k.Start(t.Context())
		synctest.Wait()
		if !k.NoFreeWorkerID() {
			t.Errorf("NoFreeWorkerID() with every worker ID held = false, want true")
		}
		if _, ok := k.Lease(); ok || k.Session() != nil || k.SecondsLeft(time.Now()) != 0 {
			t.Errorf("keeper reports a lease with every worker ID held")
		}
		if err := other.Release(t.Context(), "", held[1].WorkerID, held[1].Token, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if k.NoFreeWorkerID() {
			t.Errorf("NoFreeWorkerID() once an ID was freed = true, want false")
		}
		if l, ok := k.Lease(); !ok || l.WorkerID != 1 {
			t.Errorf("Lease() = %+v, %v, want worker ID 1", l, ok)
		}
		closeKeeper(t, k, 0)
	})
}

func TestKeeperClose(t *testing.T) {
	t.Run("releases the current session with the final timestamp", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemoryStore(nil)
			acquisitions := newCalls()
			fs := &faultStore{Store: mem}
			fs.AcquireFunc = func(ctx context.Context, req AcquireRequest) (Lease, error) {
				acquisitions.add(0)
				return mem.Acquire(ctx, req)
			}
			k := mustKeeper(t, fs, Config{TTL: testTTL}, KeeperConfig{})
			k.Start(t.Context())
			synctest.Wait()
			s := k.Session()
			final := time.Now().Add(time.Hour).UnixMilli()
			closeKeeper(t, k, final)
			row := mustLease(t, mem, s.Lease().WorkerID)
			if !row.released || row.lastTimestampMS != final {
				t.Errorf("row after Close: released %v, last_timestamp_ms %d; want released, %d", row.released, row.lastTimestampMS, final)
			}
			if !isClosed(s.Done()) || fenceNow(s) {
				t.Errorf("session open after Close")
			}
			if _, ok := k.Lease(); ok {
				t.Errorf("Lease() after Close: held, want none")
			}
			if err := k.Close(context.Background(), 0); err != nil {
				t.Errorf("second Close() = %v, want nil", err)
			}
			k.Start(t.Context())
			synctest.Wait()
			if got := acquisitions.count(); got != 1 {
				t.Errorf("acquisitions = %d, want 1: Start after Close does nothing", got)
			}
		})
	})
	t.Run("store unreachable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			down := errors.New("connection refused")
			fs := &faultStore{Store: NewMemoryStore(nil), ReleaseFunc: func(context.Context, string, int64, string, int64) error { return down }}
			k := mustKeeper(t, fs, Config{TTL: testTTL}, KeeperConfig{})
			k.Start(t.Context())
			synctest.Wait()
			if err := k.Close(context.Background(), 0); !errors.Is(err, down) {
				t.Errorf("Close() = %v, want %v", err, down)
			}
			if fenceNow(k.Session()) {
				t.Errorf("Fence() after a failed Close = true, want false")
			}
		})
	})
	t.Run("never started", func(t *testing.T) {
		closeKeeper(t, mustKeeper(t, NewMemoryStore(nil), Config{}, KeeperConfig{}), 0)
	})
	t.Run("while acquiring", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs := &faultStore{Store: NewMemoryStore(nil)}
			fs.AcquireFunc = func(context.Context, AcquireRequest) (Lease, error) { return Lease{}, ErrNoWorkerID }
			k := mustKeeper(t, fs, Config{TTL: testTTL}, KeeperConfig{})
			k.Start(t.Context())
			time.Sleep(5 * time.Second)
			closeKeeper(t, k, 0)
		})
	})
	t.Run("before the first renewal returns: releases the grant", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemoryStore(nil)
			fs := &faultStore{Store: mem}
			fs.RenewFunc = func(ctx context.Context, _ string, _ int64, _ string, _ time.Duration, _ int64) (Lease, error) {
				<-ctx.Done()
				return Lease{}, ctx.Err()
			}
			k := mustKeeper(t, fs, Config{TTL: testTTL}, KeeperConfig{})
			k.Start(t.Context())
			synctest.Wait()
			closeKeeper(t, k, 0)
			if row := mustLease(t, mem, 0); !row.released {
				t.Errorf("grant not released")
			}
			if k.Session() != nil {
				t.Errorf("Session() = non-nil, want nil: no session was completed")
			}
		})
	})
}

// TestKeeperStartContextEnds: when Start's context ends nobody keeps the
// lease: the session stops renewing and its fence closes at once; Close
// still releases the lease, which the store held meanwhile.
func TestKeeperStartContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		renewals := newCalls()
		fs := &faultStore{Store: mem}
		fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			renewals.add(last)
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		k := mustKeeper(t, fs, Config{TTL: testTTL}, KeeperConfig{})
		ctx, cancel := context.WithCancel(t.Context())
		k.Start(ctx)
		synctest.Wait()
		s := k.Session()
		time.Sleep(5 * time.Second)
		cancel()
		synctest.Wait()
		if !isClosed(s.Done()) || fenceNow(s) {
			t.Errorf("session open after Start's context ended")
		}
		if err := s.Err(); !errors.Is(err, ErrSessionClosed) {
			t.Errorf("Err() = %v, want %v", err, ErrSessionClosed)
		}
		time.Sleep(20 * time.Second)
		if got := renewals.count(); got != 1 {
			t.Errorf("renewals = %d, want 1: none after Start's context ended", got)
		}
		if row := mustLease(t, mem, 0); row.released || !row.live(mem.now()) {
			t.Errorf("lease gone before Close or its TTL")
		}
		closeKeeper(t, k, 0)
		if row := mustLease(t, mem, 0); !row.released {
			t.Errorf("Close did not release the lease kept until the context ended")
		}
	})
}
