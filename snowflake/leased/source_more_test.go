package workerlease

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

// TestSourceNoLeaseYet: before the first lease, a retry (resp_code 3) is
// the answer unless the keeper found every worker ID held (resp_code 5).
func TestSourceNoLeaseYet(t *testing.T) {
	h := newHolder(t, NewMemoryStore(nil), Config{}, time.Now)
	if _, err := h.src.Next(); !errors.Is(err, snowflake.ErrFenced) {
		t.Errorf("Next() error = %v, want %v", err, snowflake.ErrFenced)
	}
	if err := h.src.NextN(make([]int64, 3)); !errors.Is(err, snowflake.ErrFenced) {
		t.Errorf("NextN() error = %v, want %v", err, snowflake.ErrFenced)
	}
	synctest.Test(t, func(t *testing.T) {
		mem := NewMemoryStore(nil)
		cfg := Config{MaxWorkerID: 1}
		other := newTestService(t, mem, Config{MaxWorkerID: 1, Now: skewed(toNov2026)})
		for range 2 {
			if _, err := other.Acquire(t.Context(), "", "other"); err != nil {
				t.Fatal(err)
			}
		}
		full := newHolder(t, mem, cfg, skewed(toNov2026))
		full.k.Start(t.Context())
		synctest.Wait()
		if _, err := full.src.Next(); !errors.Is(err, ErrNoWorkerID) {
			t.Errorf("Next() with every worker ID held before the first lease: error = %v, want %v", err, ErrNoWorkerID)
		}
		if err := full.src.NextN(make([]int64, 3)); !errors.Is(err, ErrNoWorkerID) {
			t.Errorf("NextN() with every worker ID held before the first lease: error = %v, want %v", err, ErrNoWorkerID)
		}
		closeKeeper(t, full.k, 0)
	})
	if got := h.src.LastTimestampMS(); got != 0 {
		t.Errorf("LastTimestampMS() = %d, want 0", got)
	}
	if got, want := h.src.Layout().WorkerBits, snowflake.DefaultWorkerBits; got != want {
		t.Errorf("Layout().WorkerBits = %d, want %d", got, want)
	}
}

// TestSourceServesPastTheLifetimeRule: the 10-year rule is checked when the
// Source is made; a lease acquired later, once the layout has less than 10
// years left, still gets a working generator.
func TestSourceServesPastTheLifetimeRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
		layout, err := snowflake.NewLayout(epoch, snowflake.DefaultWorkerBits)
		if err != nil {
			t.Fatal(err)
		}
		var offset atomic.Int64
		offset.Store(int64(time.Until(layout.End().AddDate(-10, 0, 0).Add(-time.Hour))))
		now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		r := newKeeperRig(t, NewMemoryStore(nil), Config{Now: now}, KeeperConfig{Now: now})
		src, err := NewSource(r.k, snowflake.Settings{Epoch: epoch, Now: now, Sleep: time.Sleep})
		if err != nil {
			t.Fatalf("NewSource with 10 years and an hour left: %v", err)
		}
		offset.Add(int64(2 * time.Hour)) // the first lease comes an hour past the 10-year mark
		r.k.Start(t.Context())
		synctest.Wait()
		if _, err := src.Next(); err != nil {
			t.Fatalf("Next under a lease acquired with under 10 years left: %v", err)
		}
		closeKeeper(t, r.k, src.LastTimestampMS())
	})
}
