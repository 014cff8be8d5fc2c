package frontendtest

import (
	"context"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// StartLease takes a worker lease of svc with the real keeper and returns
// it with its snowflake source once the source issues IDs, failing tb
// after 10 s. tb's cleanup closes the keeper, after the cleanups
// registered later (a front end's).
func StartLease(tb testing.TB, svc *workerlease.Service) (*workerlease.Keeper, *leased.Source) {
	tb.Helper()
	keeper, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc})
	if err != nil {
		tb.Fatal(err)
	}
	layout, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	source, err := leased.New(keeper, layout, snowflake.Settings{})
	if err != nil {
		tb.Fatal(err)
	}
	keeper.Start(context.Background())
	tb.Cleanup(func() { _ = keeper.Close(context.Background(), source.LastTimestampMS()) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		// ErrNoWorkerID until the lease is granted, ErrFenced until its
		// first renewal has reserved timestamps.
		if _, err := source.Next(); err == nil {
			return keeper, source
		} else if time.Now().After(deadline) {
			tb.Fatalf("snowflake source not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
