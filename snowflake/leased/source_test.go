package workerlease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

// holder is one process: its clock, Keeper and Source.
type holder struct {
	*keeperRig
	src *Source
}

func newHolder(tb testing.TB, store Store, cfg Config, now func() time.Time) *holder {
	tb.Helper()
	cfg.Now = now
	r := newKeeperRig(tb, store, cfg, KeeperConfig{Now: now})
	src, err := NewSource(r.k, snowflake.Settings{Now: now, Sleep: time.Sleep})
	if err != nil {
		tb.Fatalf("NewSource: %v", err)
	}
	return &holder{r, src}
}

// adjustableClock is the bubble's clock shifted into 2026 and by an offset
// the test can change, to step the clock back.
type adjustableClock struct{ offset atomic.Int64 }

func (c *adjustableClock) Now() time.Time {
	return time.Now().Add(toNov2026 + time.Duration(c.offset.Load()))
}

func (c *adjustableClock) Step(d time.Duration) { c.offset.Add(int64(d)) }

// TestSourceStalledHolder is the scenario of guarantee 5: holder A is cut
// off from the store; its fence closes before the store lets its lease
// lapse; B takes A's worker ID and issues only IDs above A's, however far
// B's clock is behind.
func TestSourceStalledHolder(t *testing.T) {
	tests := []struct {
		name  string
		bSkew time.Duration // B's clock minus A's (and the store's)
	}{
		{"same clocks", 0},
		{"B 5s behind", -5 * time.Second},
		{"B 10 minutes behind", -10 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				elapsed := func() time.Duration { return time.Since(start) }
				storeClock := skewed(toNov2026)
				mem := NewMemoryStore(storeClock)
				cfg := Config{TTL: testTTL, MaxWorkerID: 1}

				// A's link to the store: once partitioned, renewals hang
				// until their deadline and every other call fails.
				var partitioned atomic.Bool
				errPartition := errors.New("network partition")
				linkA := &faultStore{Store: mem}
				linkA.acquire = func(ctx context.Context, req AcquireRequest) (Lease, error) {
					if partitioned.Load() {
						return Lease{}, errPartition
					}
					return mem.Acquire(ctx, req)
				}
				linkA.renew = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
					if partitioned.Load() {
						<-ctx.Done()
						return Lease{}, ctx.Err()
					}
					return mem.Renew(ctx, c, id, tok, ttl, last)
				}
				linkA.release = func(ctx context.Context, c string, id int64, tok string, last int64) error {
					if partitioned.Load() {
						return errPartition
					}
					return mem.Release(ctx, c, id, tok, last)
				}

				a := newHolder(t, linkA, cfg, storeClock)
				a.k.Start(t.Context())
				synctest.Wait()
				// C holds the other worker ID throughout, so B can only get A's.
				c := newKeeperRig(t, mem, Config{TTL: testTTL, MaxWorkerID: 1, Now: storeClock}, KeeperConfig{Now: storeClock})
				c.k.Start(t.Context())
				synctest.Wait()
				leaseA, ok := a.k.Lease()
				if !ok || leaseA.WorkerID != 0 {
					t.Fatalf("A's lease = %+v, %v, want worker ID 0", leaseA, ok)
				}

				issuedA := make(map[int64]bool)
				var maxA int64
				batch := make([]int64, 500)
				issueA := func() {
					t.Helper()
					if err := a.src.NextN(batch); err != nil {
						t.Fatalf("A NextN at %v: %v", elapsed(), err)
					}
					for _, id := range batch {
						issuedA[id] = true
						maxA = max(maxA, id)
					}
				}
				for elapsed() < 5*time.Second {
					issueA()
					time.Sleep(100 * time.Millisecond)
				}
				partitioned.Store(true)
				for elapsed() < 26*time.Second {
					issueA()
					time.Sleep(100 * time.Millisecond)
				}
				time.Sleep(27*time.Second - time.Millisecond - elapsed())
				issueA() // the last millisecond before A's local deadline

				time.Sleep(time.Millisecond)
				if _, err := a.src.Next(); !errors.Is(err, snowflake.ErrFenced) {
					t.Errorf("A Next at its local deadline: error = %v, want %v", err, snowflake.ErrFenced)
				}
				if row := mustLease(t, mem, 0); row.token != leaseA.Token || !row.live(storeClock()) {
					t.Errorf("the store no longer holds A's lease at A's local deadline; the fence closed too late")
				}

				time.Sleep(31*time.Second - elapsed()) // A's lease expired in the store at 30s
				b := newHolder(t, mem, cfg, skewed(toNov2026+tt.bSkew))
				b.k.Start(t.Context())
				synctest.Wait()
				leaseB, ok := b.k.Lease()
				if !ok || leaseB.WorkerID != leaseA.WorkerID {
					t.Fatalf("B's lease = %+v, %v, want A's worker ID %d", leaseB, ok, leaseA.WorkerID)
				}
				// A's only renewal reached the store at 0s, reserving up to 30s.
				floor := storeClock().Add(-elapsed() + testTTL).UnixMilli()
				if got := b.announced(); len(got) != 1 || got[0].LastTimestampMS != floor {
					t.Fatalf("B's OnLease got %+v, want one lease with LastTimestampMS %d", got, floor)
				}

				// B's clock passes the floor (30s on A's clock) at 30s - bSkew.
				if passes := 30*time.Second - tt.bSkew; passes > elapsed() {
					if _, err := b.src.Next(); !errors.Is(err, snowflake.ErrClockDriftTryLater) {
						t.Errorf("B Next at %v: error = %v, want %v", elapsed(), err, snowflake.ErrClockDriftTryLater)
					}
					time.Sleep(passes - time.Second - elapsed())
					if _, err := b.src.Next(); !errors.Is(err, snowflake.ErrClockDriftTryLater) {
						t.Errorf("B Next at %v: error = %v, want %v", elapsed(), err, snowflake.ErrClockDriftTryLater)
					}
					time.Sleep(2 * time.Second)
				}
				for range 10 {
					if err := b.src.NextN(batch); err != nil {
						t.Fatalf("B NextN at %v: %v", elapsed(), err)
					}
					for _, id := range batch {
						if issuedA[id] {
							t.Fatalf("B issued %d, which A issued too", id)
						}
						if id <= maxA {
							t.Fatalf("B issued %d, not above A's highest %d", id, maxA)
						}
					}
					time.Sleep(50 * time.Millisecond)
				}
				if _, err := a.src.Next(); !errors.Is(err, snowflake.ErrFenced) {
					t.Errorf("A Next after B took over: error = %v, want %v", err, snowflake.ErrFenced)
				}
				// The partition heals; B and C hold both worker IDs, so A's
				// keeper finds none free, and A says so (resp_code 5).
				partitioned.Store(false)
				time.Sleep(2 * testTTL)
				if _, err := a.src.Next(); !errors.Is(err, ErrNoWorkerID) {
					t.Errorf("A Next with every worker ID held: error = %v, want %v", err, ErrNoWorkerID)
				}

				closeKeeper(t, b.k, b.src.LastTimestampMS())
				closeKeeper(t, c.k, 0)
				closeKeeper(t, a.k, a.src.LastTimestampMS()) // A holds nothing left to release
			})
		})
	}
}

func TestNewSourceInvalid(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		base    snowflake.Settings
		started bool
		want    error
	}{
		{"worker bits too narrow for MaxWorkerID", Config{MaxWorkerID: 1023}, snowflake.Settings{WorkerBits: 9}, false, snowflake.ErrInvalidWorkerID},
		{"bad snowflake settings", Config{}, snowflake.Settings{MaxDriftBlock: -time.Second}, false, snowflake.ErrInvalidSettings},
		{"keeper already started", Config{}, snowflake.Settings{}, true, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := skewed(toNov2026)
				tt.cfg.Now = now
				r := newKeeperRig(t, NewMemoryStore(nil), tt.cfg, KeeperConfig{Now: now})
				if tt.started {
					r.k.Start(t.Context())
					defer closeKeeper(t, r.k, 0)
				}
				tt.base.Now, tt.base.Sleep = now, time.Sleep
				if _, err := NewSource(r.k, tt.base); !errors.Is(err, tt.want) {
					t.Errorf("NewSource() error = %v, want %v", err, tt.want)
				}
			})
		})
	}
}

func TestSourceGivesUpOnLargeDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(skewed(toNov2026))
		var releases atomic.Int64
		fs := &faultStore{Store: mem}
		fs.release = func(ctx context.Context, c string, id int64, tok string, last int64) error {
			releases.Add(1)
			return mem.Release(ctx, c, id, tok, last)
		}
		var clock adjustableClock
		h := newHolder(t, fs, Config{TTL: testTTL, MaxWorkerID: 1}, clock.Now)
		h.k.Start(t.Context())
		synctest.Wait()
		if _, err := h.src.Next(); err != nil {
			t.Fatalf("Next: %v", err)
		}
		lost := h.k.Lost()

		clock.Step(-2 * time.Second) // beyond the default MaxDriftError of 1s
		for range 3 {
			if _, err := h.src.Next(); !errors.Is(err, snowflake.ErrClockDriftTooLargeToRecover) {
				t.Errorf("Next() error = %v, want %v", err, snowflake.ErrClockDriftTooLargeToRecover)
			}
		}
		if !isClosed(lost) {
			t.Errorf("lease not given up")
		}
		synctest.Wait()
		if got, want := releases.Load(), int64(1); got != want {
			t.Errorf("releases = %d, want %d", got, want)
		}

		time.Sleep(time.Second) // RetryInterval
		synctest.Wait()
		id, err := h.src.Next()
		if err != nil {
			t.Fatalf("Next under the new lease: %v", err)
		}
		// Worker ID 0 is reserved ahead of the stepped-back clock; 1 is not.
		parts, err := h.src.Layout().Decompose(id)
		if err != nil {
			t.Fatalf("Decompose: %v", err)
		}
		if got, want := parts.WorkerID, int64(1); got != want {
			t.Errorf("worker ID after giving up = %d, want %d", got, want)
		}
		closeKeeper(t, h.k, h.src.LastTimestampMS())
	})
}

// TestSourceSameWorkerStartsAfterPreviousGenerator covers a store that has
// lost a worker ID's reservation (say, restored from a backup): when the
// Keeper gets the same worker ID back, the previous generator's last
// timestamp still keeps the new one above its IDs.
func TestSourceSameWorkerStartsAfterPreviousGenerator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(skewed(toNov2026))
		fs := &faultStore{Store: mem}
		fs.acquire = func(ctx context.Context, req AcquireRequest) (Lease, error) {
			l, err := mem.Acquire(ctx, req)
			l.LastTimestampMS = 0
			return l, err
		}
		var clock adjustableClock
		cfg := Config{TTL: testTTL, MaxWorkerID: 1}
		h := newHolder(t, fs, cfg, clock.Now)
		h.k.Start(t.Context())
		synctest.Wait()
		filler := newTestService(t, mem, cfg)
		if l, err := filler.Acquire(context.Background(), "", ""); err != nil || l.WorkerID != 1 {
			t.Fatalf("filler Acquire = %+v, %v, want worker ID 1", l, err)
		}

		time.Sleep(5 * time.Second)
		ids := make([]int64, 1000)
		if err := h.src.NextN(ids); err != nil {
			t.Fatalf("NextN: %v", err)
		}
		last := ids[len(ids)-1]
		lease, _ := h.k.Lease()
		h.k.GiveUp(lease)
		clock.Step(-3 * time.Second)
		time.Sleep(time.Second) // RetryInterval
		synctest.Wait()
		if got := h.announced(); len(got) != 2 || got[1].WorkerID != lease.WorkerID {
			t.Fatalf("OnLease got %+v, want a second lease on worker ID %d", got, lease.WorkerID)
		}
		if _, err := h.src.Next(); !errors.Is(err, snowflake.ErrClockDriftTryLater) {
			t.Errorf("Next() 2s behind the previous generator: error = %v, want %v", err, snowflake.ErrClockDriftTryLater)
		}
		time.Sleep(2 * time.Second)
		id, err := h.src.Next()
		if err != nil {
			t.Fatalf("Next once the clock caught up: %v", err)
		}
		if id <= last {
			t.Errorf("Next() = %d, want above the previous generator's %d", id, last)
		}
		closeKeeper(t, h.k, h.src.LastTimestampMS())
	})
}

func BenchmarkSourceNext(b *testing.B) {
	h := newHolder(b, NewMemoryStore(nil), Config{}, time.Now)
	h.k.Start(b.Context())
	b.Cleanup(func() { closeKeeper(b, h.k, h.src.LastTimestampMS()) })
	for _, ok := h.k.Lease(); !ok; _, ok = h.k.Lease() {
		time.Sleep(time.Millisecond)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.src.Next(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := h.src.Next(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
