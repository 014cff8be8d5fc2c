package workerlease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const testTTL = 30 * time.Second // default Margin 3s, renewals every 10s

func TestNewKeeperInvalid(t *testing.T) {
	svc := newTestService(t, NewMemoryStore(nil), Config{TTL: testTTL})
	tests := []struct {
		name string
		cfg  KeeperConfig
	}{
		{"nil service", KeeperConfig{}},
		{"negative margin", KeeperConfig{Service: svc, Margin: -time.Second}},
		{"margin of half the TTL", KeeperConfig{Service: svc, Margin: testTTL / 2}},
		{"negative retry", KeeperConfig{Service: svc, RetryInterval: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewKeeper(tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewKeeper() error = %v, want %v", err, ErrInvalidConfig)
			}
		})
	}
}

// TestKeeperFence follows one lease through its fence's states: closed
// before the first renewal, open after, closed at the local deadline while a
// renewal stalls (before the store's own expiry), open again when the stalled
// renewal succeeds.
func TestKeeperFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		mem := NewMemoryStore(nil)
		var renewals atomic.Int64
		gates := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
		fs := &faultStore{Store: mem}
		fs.renew = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			if n := renewals.Add(1); int(n) <= len(gates) {
				// A stall that ignores ctx, like a hung connection whose
				// request the store then processes anyway.
				<-gates[n-1]
				ctx = context.WithoutCancel(ctx)
			}
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		r := newKeeperRig(t, fs, Config{TTL: testTTL}, KeeperConfig{})
		k := r.k
		allow := func() bool { now := time.Now(); return k.Allow(now, now.UnixMilli()) }
		k.Start(t.Context())
		synctest.Wait()

		if allow() {
			t.Errorf("Allow() before the first renewal = true, want false")
		}
		if _, ok := k.Lease(); ok {
			t.Errorf("Lease() before the first renewal held, want none")
		}
		if n := len(r.announced()); n != 0 {
			t.Errorf("OnLease called %d times before the first renewal, want 0", n)
		}

		close(gates[0])
		synctest.Wait()
		if !allow() {
			t.Errorf("Allow() after the first renewal = false, want true")
		}
		l, ok := k.Lease()
		if !ok {
			t.Fatalf("Lease() after the first renewal: none held")
		}
		reserve := start.Add(testTTL).UnixMilli()
		now := time.Now()
		if !k.Allow(now, reserve) {
			t.Errorf("Allow(now, reservation) = false, want true")
		}
		if k.Allow(now, reserve+1) {
			t.Errorf("Allow(now, reservation+1) = true, want false")
		}
		if got, want := k.SecondsLeft(now), 27.0; got != want {
			t.Errorf("SecondsLeft() = %v, want %v", got, want)
		}
		if got := r.announced(); len(got) != 1 || got[0].Token != l.Token || got[0].LastTimestampMS != 0 {
			t.Errorf("OnLease got %+v, want one lease with token %q and LastTimestampMS 0", got, l.Token)
		}

		// The renewal sent at 10s stalls. The fence must close at
		// 0 + TTL - Margin = 27s, while the store still holds the lease.
		time.Sleep(27*time.Second - time.Nanosecond)
		if !allow() {
			t.Errorf("Allow() just before the local deadline = false, want true")
		}
		time.Sleep(time.Nanosecond)
		if allow() {
			t.Errorf("Allow() at the local deadline = true, want false")
		}
		if got := k.SecondsLeft(time.Now()); got != 0 {
			t.Errorf("SecondsLeft() at the deadline = %v, want 0", got)
		}
		if row := mustLease(t, mem, l.WorkerID); !row.live(mem.now()) {
			t.Errorf("store expired the lease (at %v) before the holder's fence closed", row.expiresAt)
		}

		time.Sleep(time.Second)
		close(gates[1])
		synctest.Wait()
		if !allow() {
			t.Errorf("Allow() after the stalled renewal succeeded = false, want true")
		}
		// Its deadline counts from when it was sent: 10s + 27s. The next
		// renewal, overdue since 20s, is sent at once and stalls too.
		if got, want := k.SecondsLeft(time.Now()), 9.0; got != want {
			t.Errorf("SecondsLeft() = %v, want %v", got, want)
		}
		if got, ok := k.Lease(); !ok || got.Token != l.Token {
			t.Errorf("Lease() = %+v, %v, want the first lease still held", got, ok)
		}
		if got, want := renewals.Load(), int64(3); got != want {
			t.Errorf("renewals sent = %d, want %d", got, want)
		}
		close(gates[2])
		synctest.Wait()
		if got, want := k.SecondsLeft(time.Now()), 27.0; got != want {
			t.Errorf("SecondsLeft() after the overdue renewal = %v, want %v", got, want)
		}
		closeKeeper(t, k, 0)
		if allow() {
			t.Errorf("Allow() after Close = true, want false")
		}
	})
}

func TestKeeperClose(t *testing.T) {
	t.Run("releases with the final timestamp", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemoryStore(nil)
			r := newKeeperRig(t, mem, Config{TTL: testTTL}, KeeperConfig{})
			r.k.Start(t.Context())
			synctest.Wait()
			l, _ := r.k.Lease()
			lost := r.k.Lost()
			final := time.Now().Add(time.Hour).UnixMilli()
			closeKeeper(t, r.k, final)
			row := mustLease(t, mem, l.WorkerID)
			if !row.released {
				t.Errorf("lease not released")
			}
			if got := row.lastTimestampMS; got != final {
				t.Errorf("last_timestamp_ms = %d, want %d", got, final)
			}
			if !isClosed(lost) {
				t.Errorf("Lost() not closed by Close")
			}
			if _, ok := r.k.Lease(); ok {
				t.Errorf("Lease() after Close held, want none")
			}
			if err := r.k.Close(context.Background(), 0); err != nil {
				t.Errorf("second Close() = %v, want nil", err)
			}
			r.k.Start(t.Context())
			synctest.Wait()
			if _, ok := r.k.Lease(); ok {
				t.Errorf("Start after Close acquired a lease")
			}
		})
	})
	t.Run("store unreachable: abandons", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemoryStore(nil)
			down := errors.New("connection refused")
			fs := &faultStore{Store: mem, release: func(context.Context, string, int64, string, int64) error { return down }}
			r := newKeeperRig(t, fs, Config{TTL: testTTL}, KeeperConfig{})
			r.k.Start(t.Context())
			synctest.Wait()
			if err := r.k.Close(context.Background(), 0); !errors.Is(err, down) {
				t.Errorf("Close() = %v, want %v", err, down)
			}
			if now := time.Now(); r.k.Allow(now, now.UnixMilli()) {
				t.Errorf("Allow() after a failed Close = true, want false")
			}
		})
	})
	t.Run("never started", func(t *testing.T) {
		r := newKeeperRig(t, NewMemoryStore(nil), Config{}, KeeperConfig{})
		closeKeeper(t, r.k, 0)
	})
	t.Run("while acquiring", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs := &faultStore{Store: NewMemoryStore(nil)}
			fs.acquire = func(context.Context, AcquireRequest) (Lease, error) { return Lease{}, ErrNoWorkerID }
			r := newKeeperRig(t, fs, Config{TTL: testTTL}, KeeperConfig{})
			r.k.Start(t.Context())
			time.Sleep(5 * time.Second)
			closeKeeper(t, r.k, 0)
		})
	})
	t.Run("before the first renewal returns: releases the unpublished lease", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemoryStore(nil)
			fs := &faultStore{Store: mem}
			fs.renew = func(ctx context.Context, _ string, _ int64, _ string, _ time.Duration, _ int64) (Lease, error) {
				<-ctx.Done()
				return Lease{}, ctx.Err()
			}
			r := newKeeperRig(t, fs, Config{TTL: testTTL}, KeeperConfig{})
			r.k.Start(t.Context())
			synctest.Wait()
			closeKeeper(t, r.k, 0)
			if row := mustLease(t, mem, 0); !row.released {
				t.Errorf("lease not released")
			}
			if got := len(r.announced()); got != 0 {
				t.Errorf("OnLease called %d times, want 0", got)
			}
		})
	})
}

func TestKeeperStartContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		r := newKeeperRig(t, mem, Config{TTL: testTTL}, KeeperConfig{})
		ctx, cancel := context.WithCancel(t.Context())
		r.k.Start(ctx)
		synctest.Wait()
		lost := r.k.Lost()
		cancel()
		synctest.Wait()
		if !isClosed(lost) {
			t.Errorf("Lost() not closed when Start's context ended")
		}
		if now := time.Now(); r.k.Allow(now, now.UnixMilli()) {
			t.Errorf("Allow() after Start's context ended = true, want false")
		}
		closeKeeper(t, r.k, 0)
		if row := mustLease(t, mem, 0); !row.released {
			t.Errorf("Close did not release the lease kept until the context ended")
		}
	})
}

func TestAllowDoesNotAllocate(t *testing.T) {
	svc := newTestService(t, NewMemoryStore(nil), Config{})
	k, err := NewKeeper(KeeperConfig{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	k.state.Store(&held{deadline: time.Hour, reserve: now.UnixMilli()})
	fence := k.Fence(Lease{})
	if got := testing.AllocsPerRun(100, func() {
		k.Allow(now, now.UnixMilli())
		fence(now, now.UnixMilli())
	}); got != 0 {
		t.Errorf("Allow and Fence allocate %v times per call, want 0", got)
	}
}

func BenchmarkAllow(b *testing.B) {
	svc := newTestService(b, NewMemoryStore(nil), Config{})
	k, err := NewKeeper(KeeperConfig{Service: svc})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	k.state.Store(&held{deadline: time.Hour, reserve: now.UnixMilli() + 1000})
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !k.Allow(now, now.UnixMilli()) {
				b.Fatal("Allow() = false")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k.Allow(now, now.UnixMilli())
			}
		})
	})
}
