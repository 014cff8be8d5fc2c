package leased_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

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
				mem := workerlease.NewMemoryStore(storeClock)
				cfg := workerlease.Config{TTL: testTTL, MaxWorkerID: 1}

				// A's link to the store: once partitioned, renewals hang
				// until their deadline and every other call fails.
				var partitioned atomic.Bool
				errPartition := errors.New("network partition")
				linkA := &faultStore{Store: mem}
				linkA.AcquireFunc = func(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
					if partitioned.Load() {
						return workerlease.Lease{}, errPartition
					}
					return mem.Acquire(ctx, req)
				}
				linkA.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (workerlease.Lease, error) {
					if partitioned.Load() {
						<-ctx.Done()
						return workerlease.Lease{}, ctx.Err()
					}
					return mem.Renew(ctx, c, id, tok, ttl, last)
				}
				linkA.ReleaseFunc = func(ctx context.Context, c string, id int64, tok string, last int64) error {
					if partitioned.Load() {
						return errPartition
					}
					return mem.Release(ctx, c, id, tok, last)
				}

				a := newHolder(t, linkA, cfg, storeClock)
				a.k.Start(t.Context())
				synctest.Wait()
				// C holds the other worker ID throughout, so B can only get A's.
				c := newHolder(t, mem, cfg, storeClock)
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
				// The store still holds A's lease (to 30s): nobody can take
				// worker ID 0 while A's fence is closing.
				probe := newService(t, mem, cfg)
				if l, err := probe.Acquire(t.Context(), "", "probe"); !errors.Is(err, workerlease.ErrNoWorkerID) {
					t.Fatalf("Acquire at A's local deadline = %+v, %v, want %v: the fence closed too late", l, err, workerlease.ErrNoWorkerID)
				}

				time.Sleep(31*time.Second - elapsed()) // A's lease expired in the store at 30s
				b := newHolder(t, mem, cfg, skewed(toNov2026+tt.bSkew))
				b.k.Start(t.Context())
				synctest.Wait()
				sb := b.k.Session()
				if sb == nil || sb.Lease().WorkerID != leaseA.WorkerID {
					t.Fatalf("B's session = %v, want one on A's worker ID %d", sb, leaseA.WorkerID)
				}
				// A's only renewal reached the store at 0s, reserving up to 30s.
				floor := storeClock().Add(-elapsed() + testTTL).UnixMilli()
				if got := sb.Lease().LastTimestampMS; got != floor {
					t.Fatalf("B's Lease().LastTimestampMS = %d, want A's reservation %d", got, floor)
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
				if _, err := a.src.Next(); !errors.Is(err, workerlease.ErrNoWorkerID) {
					t.Errorf("A Next with every worker ID held: error = %v, want %v", err, workerlease.ErrNoWorkerID)
				}

				b.close(t)
				c.close(t)
				a.close(t) // A holds nothing left to release
			})
		})
	}
}

// TestSourceNoLeaseYet: before the first session, a retry (resp_code 3)
// that says why (a WaitError, still ErrFenced) is the answer unless the
// keeper found every worker ID held (resp_code 5).
func TestSourceNoLeaseYet(t *testing.T) {
	h := newHolder(t, workerlease.NewMemoryStore(nil), workerlease.Config{}, time.Now)
	_, nextErr := h.src.Next()
	for name, err := range map[string]error{"Next": nextErr, "NextN": h.src.NextN(make([]int64, 3))} {
		we, ok := errors.AsType[*workerlease.WaitError](err)
		if !errors.Is(err, snowflake.ErrFenced) || !ok || we.Wait.Reason != workerlease.WaitAcquiring ||
			errs.KindOf(err) != errs.Unavailable || !strings.Contains(err.Error(), workerlease.WaitAcquiring) {
			t.Errorf("%s() error = %v, want %v, a WaitError of kind unavailable saying %q",
				name, err, snowflake.ErrFenced, workerlease.WaitAcquiring)
		}
	}
	if got := h.src.LastTimestampMS(); got != 0 {
		t.Errorf("LastTimestampMS() = %d, want 0", got)
	}
	if got, want := h.src.Layout(), defaultLayout(t); got != want {
		t.Errorf("Layout() = %+v, want %+v", got, want)
	}
	synctest.Test(t, func(t *testing.T) {
		mem := workerlease.NewMemoryStore(nil)
		cfg := workerlease.Config{MaxWorkerID: 1}
		other := newService(t, mem, workerlease.Config{MaxWorkerID: 1, Now: skewed(toNov2026)})
		for range 2 {
			if _, err := other.Acquire(t.Context(), "", "other"); err != nil {
				t.Fatal(err)
			}
		}
		full := newHolder(t, mem, cfg, skewed(toNov2026))
		full.k.Start(t.Context())
		synctest.Wait()
		if _, err := full.src.Next(); !errors.Is(err, workerlease.ErrNoWorkerID) {
			t.Errorf("Next() with every worker ID held before the first lease: error = %v, want %v", err, workerlease.ErrNoWorkerID)
		}
		if err := full.src.NextN(make([]int64, 3)); !errors.Is(err, workerlease.ErrNoWorkerID) {
			t.Errorf("NextN() with every worker ID held before the first lease: error = %v, want %v", err, workerlease.ErrNoWorkerID)
		}
		full.close(t)
	})
}

func TestNewInvalid(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	valid, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	future, err := snowflake.NewLayout(now.Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	handMade := valid
	handMade.WorkerBits = 12 // the sequence bits no longer add up
	tests := []struct {
		name   string
		layout snowflake.Layout
		base   snowflake.Settings
		want   error
	}{
		{"no layout", snowflake.Layout{}, snowflake.Settings{}, snowflake.ErrInvalidLayout},
		{"a layout not made by NewLayout", handMade, snowflake.Settings{}, snowflake.ErrInvalidLayout},
		{"epoch after now", future, snowflake.Settings{}, snowflake.ErrInvalidLayout},
		{"worker bits beside the layout", valid, snowflake.Settings{WorkerBits: 10}, snowflake.ErrInvalidSettings},
		{"an epoch beside the layout", valid, snowflake.Settings{Epoch: valid.Epoch}, snowflake.ErrInvalidSettings},
		{"negative drift block", valid, snowflake.Settings{MaxDriftBlock: -time.Second}, snowflake.ErrInvalidSettings},
		{"negative floor", valid, snowflake.Settings{StartAfterMS: -1}, snowflake.ErrInvalidSettings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: newService(t, workerlease.NewMemoryStore(nil), workerlease.Config{})})
			if err != nil {
				t.Fatal(err)
			}
			tt.base.Now, tt.base.Sleep = clock, time.Sleep
			if src, err := leased.New(k, tt.layout, tt.base); !errors.Is(err, tt.want) {
				t.Errorf("New() = %p, %v, want error %v", src, err, tt.want)
			}
		})
	}
}
