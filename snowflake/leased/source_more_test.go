package leased_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// TestSourceGivesUpOnLargeDrift: a clock fallen behind its own IDs by more
// than MaxDriftError stops the generator; the Source gives its session up
// (released once, with the reservation) and the keeper gets a worker ID
// this clock can serve.
func TestSourceGivesUpOnLargeDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := workerlease.NewMemoryStore(skewed(toNov2026))
		var releases atomic.Int64
		fs := &faultStore{Store: mem}
		fs.ReleaseFunc = func(ctx context.Context, c string, id int64, tok string, last int64) error {
			releases.Add(1)
			return mem.Release(ctx, c, id, tok, last)
		}
		var clock adjustableClock
		h := newHolder(t, fs, workerlease.Config{TTL: testTTL, MaxWorkerID: 1}, clock.Now)
		h.k.Start(t.Context())
		synctest.Wait()
		if _, err := h.src.Next(); err != nil {
			t.Fatalf("Next: %v", err)
		}
		first := h.k.Session()

		clock.Step(-2 * time.Second) // beyond the default MaxDriftError of 1s
		for range 3 {
			if _, err := h.src.Next(); !errors.Is(err, snowflake.ErrClockDriftTooLargeToRecover) {
				t.Errorf("Next() error = %v, want %v", err, snowflake.ErrClockDriftTooLargeToRecover)
			}
		}
		if !isClosed(first.Done()) {
			t.Errorf("session not given up")
		}
		if err := first.Err(); !errors.Is(err, workerlease.ErrSessionClosed) {
			t.Errorf("Err() of the given-up session = %v, want %v", err, workerlease.ErrSessionClosed)
		}
		synctest.Wait()
		if got, want := releases.Load(), int64(1); got != want {
			t.Errorf("releases = %d, want %d", got, want)
		}

		time.Sleep(time.Second) // the keeper's RetryInterval after a give-up
		synctest.Wait()
		id, err := h.src.Next()
		if err != nil {
			t.Fatalf("Next under the new session: %v", err)
		}
		// Worker ID 0 is reserved ahead of the stepped-back clock; 1 is not.
		parts, err := h.src.Layout().Decompose(id)
		if err != nil {
			t.Fatalf("Decompose: %v", err)
		}
		if got, want := parts.WorkerID, int64(1); got != want {
			t.Errorf("worker ID after giving up = %d, want %d", got, want)
		}
		h.close(t)
	})
}

// TestSourceSameWorkerStartsAfterPreviousGenerator covers a store that has
// lost a worker ID's reservation (say, restored from a backup): when the
// Keeper gets the same worker ID back, the previous generator's last
// timestamp still keeps the new one above its IDs.
func TestSourceSameWorkerStartsAfterPreviousGenerator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := workerlease.NewMemoryStore(skewed(toNov2026))
		fs := &faultStore{Store: mem}
		fs.AcquireFunc = func(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
			l, err := mem.Acquire(ctx, req)
			l.LastTimestampMS = 0
			return l, err
		}
		var clock adjustableClock
		cfg := workerlease.Config{TTL: testTTL, MaxWorkerID: 1}
		h := newHolder(t, fs, cfg, clock.Now)
		h.k.Start(t.Context())
		synctest.Wait()
		filler := newService(t, mem, cfg)
		if l, err := filler.Acquire(context.Background(), "", ""); err != nil || l.WorkerID != 1 {
			t.Fatalf("filler Acquire = %+v, %v, want worker ID 1", l, err)
		}

		time.Sleep(5 * time.Second)
		ids := make([]int64, 1000)
		if err := h.src.NextN(ids); err != nil {
			t.Fatalf("NextN: %v", err)
		}
		last := ids[len(ids)-1]
		first := h.k.Session()
		first.GiveUp()
		clock.Step(-3 * time.Second)
		time.Sleep(time.Second) // RetryInterval
		synctest.Wait()
		second := h.k.Session()
		if second == first || second.Lease().WorkerID != first.Lease().WorkerID {
			t.Fatalf("no second session on worker ID %d", first.Lease().WorkerID)
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
		h.close(t)
	})
}

// TestSourceServesPastTheLifetimeRule: the 10-year rule is for starting a
// deployment (Layout.CheckLifetime); a layout validated then keeps serving
// sessions that begin with less than 10 years left.
func TestSourceServesPastTheLifetimeRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		layout, err := snowflake.NewLayout(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), snowflake.DefaultWorkerBits)
		if err != nil {
			t.Fatal(err)
		}
		// An hour past the 10-year mark.
		offset := time.Until(layout.End().AddDate(-10, 0, 0).Add(time.Hour))
		now := skewed(offset)
		if err := layout.CheckLifetime(now()); !errors.Is(err, snowflake.ErrLayoutTooShort) {
			t.Fatalf("CheckLifetime() = %v, want %v", err, snowflake.ErrLayoutTooShort)
		}
		k, err := workerlease.NewKeeper(workerlease.KeeperConfig{
			Service: newService(t, workerlease.NewMemoryStore(nil), workerlease.Config{Now: now}), Now: now,
		})
		if err != nil {
			t.Fatal(err)
		}
		src, err := leased.New(k, layout, snowflake.Settings{Now: now, Sleep: time.Sleep})
		if err != nil {
			t.Fatalf("leased.New with under 10 years left: %v", err)
		}
		k.Start(t.Context())
		synctest.Wait()
		if _, err := src.Next(); err != nil {
			t.Fatalf("Next with under 10 years left: %v", err)
		}
		h := &holder{k, src}
		h.close(t)
	})
}

// TestSourceWorkerIDOutsideTheLayout: a keeper granting worker IDs the
// layout cannot carry (a misconfiguration idalloc never builds: its
// Service's MaxWorkerID is the layout's) gets an error from the generator,
// never an ID with a corrupt worker field.
func TestSourceWorkerIDOutsideTheLayout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := workerlease.NewMemoryStore(nil)
		cfg := workerlease.Config{MaxWorkerID: 7, Now: skewed(toNov2026)}
		other := newService(t, mem, cfg)
		for range 4 { // IDs 0..3, all that 2 worker bits carry
			if _, err := other.Acquire(t.Context(), "", "other"); err != nil {
				t.Fatal(err)
			}
		}
		narrow, err := snowflake.NewLayout(time.Time{}, 2)
		if err != nil {
			t.Fatal(err)
		}
		k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: newService(t, mem, cfg), Now: cfg.Now})
		if err != nil {
			t.Fatal(err)
		}
		src, err := leased.New(k, narrow, snowflake.Settings{Now: cfg.Now, Sleep: time.Sleep})
		if err != nil {
			t.Fatal(err)
		}
		k.Start(t.Context())
		synctest.Wait()
		if _, err := src.Next(); !errors.Is(err, snowflake.ErrInvalidWorkerID) {
			t.Errorf("Next() under worker ID %d with 2 worker bits: error = %v, want %v",
				k.Session().Lease().WorkerID, err, snowflake.ErrInvalidWorkerID)
		}
		if err := src.NextN(make([]int64, 2)); !errors.Is(err, snowflake.ErrInvalidWorkerID) {
			t.Errorf("NextN() error = %v, want %v", err, snowflake.ErrInvalidWorkerID)
		}
		(&holder{k, src}).close(t)
	})
}
