package leased_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// TestSourceRegionsSplitWorkerIDs: two regions, each leasing from a store
// of its own, two instances in each, with 2 worker bits: each region's
// store grants worker IDs 0 and 1, and its Sources add the region's first
// worker ID (Layout.RegionWorkerIDs), so the four instances' IDs carry
// four distinct worker IDs, region r's in 2r..2r+1, and no ID repeats.
// Unsplit, both stores would grant 0 and 1 and two instances each would
// compose the same IDs.
func TestSourceRegionsSplitWorkerIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		layout, err := snowflake.NewLayout(time.Time{}, 2)
		if err != nil {
			t.Fatal(err)
		}
		now := skewed(toNov2026)
		type instance struct {
			region int64
			h      *holder
		}
		var all []instance
		for region := range int64(2) {
			first, n, err := layout.RegionWorkerIDs(2, region)
			if err != nil {
				t.Fatal(err)
			}
			mem := workerlease.NewMemoryStore(now)
			cfg := workerlease.Config{TTL: testTTL, MaxWorkerID: n - 1, Now: now}
			for range 2 {
				k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: newService(t, mem, cfg), Now: now})
				if err != nil {
					t.Fatal(err)
				}
				src, err := leased.New(k, layout, snowflake.Settings{WorkerID: first, Now: now, Sleep: time.Sleep})
				if err != nil {
					t.Fatal(err)
				}
				k.Start(t.Context())
				all = append(all, instance{region, &holder{k, src}})
			}
		}
		synctest.Wait()
		seen := map[int64]bool{}
		workers := map[int64]int64{} // snowflake worker ID → region
		for _, in := range all {
			ids := make([]int64, 500)
			if err := in.h.src.NextN(ids); err != nil {
				t.Fatalf("region %d: NextN: %v", in.region, err)
			}
			leasedID := in.h.k.Session().Lease().WorkerID
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("ID %d issued twice", id)
				}
				seen[id] = true
				p, err := layout.Decompose(id)
				if err != nil {
					t.Fatal(err)
				}
				if p.WorkerID != in.h.src.WorkerID(leasedID) || p.WorkerID/2 != in.region {
					t.Fatalf("region %d, leased worker %d: ID carries worker %d, want %d", in.region, leasedID, p.WorkerID,
						2*in.region+leasedID)
				}
				workers[p.WorkerID] = in.region
			}
		}
		if len(workers) != 4 {
			t.Errorf("worker IDs %v, want four distinct: two per region", workers)
		}
		for _, in := range all {
			in.h.close(t)
		}
	})
}

// TestRegionLeaseNames: in region 1 of 2 with 2 worker bits the store
// grants worker IDs 0 and 1; the instance's own lease shows the worker ID
// its IDs carry (2 or 3), and the lease service the layout's highest
// worker ID (3), not the region's share (1).
func TestRegionLeaseNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		layout, err := snowflake.NewLayout(time.Time{}, 2)
		if err != nil {
			t.Fatal(err)
		}
		first, n, err := layout.RegionWorkerIDs(2, 1)
		if err != nil {
			t.Fatal(err)
		}
		now := skewed(toNov2026)
		svc := newService(t, workerlease.NewMemoryStore(now), workerlease.Config{TTL: testTTL, MaxWorkerID: n - 1, Now: now})
		k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		src, err := leased.New(k, layout, snowflake.Settings{WorkerID: first, Now: now, Sleep: time.Sleep})
		if err != nil {
			t.Fatal(err)
		}
		k.Start(t.Context())
		synctest.Wait()
		granted, ok := k.Lease()
		if !ok {
			t.Fatal("the keeper holds no lease")
		}
		own, ok := leased.OwnLease{Keeper: k, Source: src}.Lease()
		if !ok || own.WorkerID != first+granted.WorkerID || own.Token != granted.Token {
			t.Errorf("own lease %+v, %v; want the granted %+v under worker ID %d", own, ok, granted, first+granted.WorkerID)
		}
		leases := leased.LayoutLeases{Service: svc, Layout: layout}
		if got, want := leases.MaxWorkerID(), layout.MaxWorkerID(); got != want || svc.MaxWorkerID() != n-1 {
			t.Errorf("MaxWorkerID %d (the service's %d), want the layout's %d (the region's %d)", got, svc.MaxWorkerID(), want, n-1)
		}
		(&holder{k, src}).close(t)
	})
}
