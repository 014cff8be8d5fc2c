package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// TestHandOverOnRealStores runs the lease protocol against every store
// driver: a Source on a Keeper's sessions issues IDs, Close hands the
// worker ID back, and the next holder gets a floor above every ID issued.
// It lives here, not in workerlease, because it needs the stores and a
// generator, and workerlease must import neither, even in its tests.
func TestHandOverOnRealStores(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			st := d.Open(t)
			cfg := workerlease.Config{Cluster: "it", MaxWorkerID: 3, TTL: 10 * time.Second}
			svc, err := workerlease.NewService(st, cfg)
			if err != nil {
				t.Fatalf("NewService: %v", err)
			}
			k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc})
			if err != nil {
				t.Fatalf("NewKeeper: %v", err)
			}
			layout, err := snowflake.NewLayout(time.Time{}, 2)
			if err != nil {
				t.Fatalf("NewLayout: %v", err)
			}
			src, err := leased.New(k, layout, snowflake.Settings{})
			if err != nil {
				t.Fatalf("leased.New: %v", err)
			}
			k.Start(ctx)
			for {
				if _, ok := k.Lease(); ok {
					break
				}
				if ctx.Err() != nil {
					k.Close(context.Background(), 0)
					t.Fatalf("no lease within the timeout")
				}
				time.Sleep(time.Millisecond)
			}
			first, _ := k.Lease()

			ids := make([]int64, 5000)
			if err := src.NextN(ids); err != nil {
				t.Fatalf("NextN: %v", err)
			}
			last, err := src.Layout().Decompose(ids[len(ids)-1])
			if err != nil {
				t.Fatalf("Decompose: %v", err)
			}
			if got, want := last.WorkerID, first.WorkerID; got != want {
				t.Errorf("IDs carry worker ID %d, want %d", got, want)
			}
			if err := k.Close(ctx, src.LastTimestampMS()); err != nil {
				t.Fatalf("Close: %v", err)
			}

			_, err = svc.Renew(ctx, "", first.WorkerID, first.Token, 0)
			if !errors.Is(err, workerlease.ErrNotAssigned) {
				t.Errorf("Renew after Close: error = %v, want %v", err, workerlease.ErrNotAssigned)
			}
			// The released ID is reserved ahead of now, so a holder whose
			// clock is an hour behind gets the other IDs first; fill them.
			behind := time.Now().Add(-time.Hour)
			late, err := workerlease.NewService(st, workerlease.Config{
				Cluster: "it", MaxWorkerID: 3, TTL: 10 * time.Second,
				Now: func() time.Time { return behind },
			})
			if err != nil {
				t.Fatalf("NewService: %v", err)
			}
			var next workerlease.Lease
			for range 4 {
				if next, err = late.Acquire(ctx, "", ""); err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				if next.WorkerID == first.WorkerID {
					break
				}
				if next.LastTimestampMS != 0 {
					t.Errorf("worker ID %d: LastTimestampMS = %d, want 0", next.WorkerID, next.LastTimestampMS)
				}
			}
			if next.WorkerID != first.WorkerID {
				t.Fatalf("worker ID %d never granted again", first.WorkerID)
			}
			if next.LastTimestampMS <= last.TimestampMS {
				t.Errorf("next holder's floor %d, want above the last ID's timestamp %d", next.LastTimestampMS, last.TimestampMS)
			}

			// The next holder's clock is 10 minutes behind: with the floor
			// from the store it issues nothing until its clock passes the
			// floor, and then only IDs above every ID the first holder issued.
			clock := time.Now().Add(-10 * time.Minute)
			gen, err := snowflake.New(snowflake.Settings{
				Layout: layout, WorkerID: next.WorkerID, StartAfterMS: next.LastTimestampMS,
				Now: func() time.Time { return clock }, Sleep: func(d time.Duration) { clock = clock.Add(d) },
			})
			if err != nil {
				t.Fatalf("snowflake.New: %v", err)
			}
			if _, err := gen.Next(); !errors.Is(err, snowflake.ErrClockDriftTryLater) {
				t.Fatalf("Next 10 minutes behind the floor: error = %v, want %v", err, snowflake.ErrClockDriftTryLater)
			}
			clock = time.UnixMilli(next.LastTimestampMS + 1)
			later := make([]int64, 5000)
			if err := gen.NextN(later); err != nil {
				t.Fatalf("NextN past the floor: %v", err)
			}
			if later[0] <= ids[len(ids)-1] {
				t.Errorf("next holder's first ID %d, want above the first holder's last %d", later[0], ids[len(ids)-1])
			}
		})
	}
}
