package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// The documented move from the embedded store to MySQL: IDs after it are
// above every ID before it, also for a tag the target already had.
func TestMigrateSQLiteToEachDriver(t *testing.T) {
	for _, target := range storetest.Drivers() {
		t.Run(target.Name, func(t *testing.T) {
			ctx := context.Background()
			fromDB := storetest.SQLite().NewDB(t)
			from := fromDB.Open(t)
			if err := from.CreateTag(ctx, segment.Tag{AppTag: "order", Step: 10, Start: 1}); err != nil {
				t.Fatal(err)
			}
			before := map[string]int64{}
			a, err := segment.New(ctx, from, segment.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tag := range []string{"test_business", "order"} {
				for i := 0; i < 25; i++ {
					if before[tag], err = a.Next(ctx, tag); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}

			toDB := target.NewDB(t) // has test_business at max_id 0, no "order"
			// The documented command, as an operator runs it.
			cmd := []string{"-from-driver", "sqlite", "-from-dsn", fromDB.DSN, "-to-driver", toDB.Driver, "-to-dsn", toDB.DSN}
			if err := migrateMain(cmd); err != nil {
				t.Fatal(err)
			}
			to := toDB.Open(t)
			b, err := segment.New(ctx, to, segment.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(ctx)
			for tag, last := range before {
				id, err := b.Next(ctx, tag)
				if err != nil {
					t.Fatal(err)
				}
				if id != last+1 {
					t.Errorf("%s: first ID after the move got %d, want %d", tag, id, last+1)
				}
			}
			// Running it again is harmless: max_id is never lowered.
			if err := migrateMain(cmd); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMigrateCarriesLeaseTimestamps(t *testing.T) {
	for _, target := range storetest.Drivers() {
		t.Run(target.Name, func(t *testing.T) {
			ctx := context.Background()
			from := storetest.SQLite().Open(t)
			l, err := from.Acquire(ctx, workerlease.AcquireRequest{Cluster: "c", MaxWorkerID: 3, Token: strings.Repeat("A", 22), TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			const reserved = int64(4_000_000_000_000)
			if _, err := from.Renew(ctx, "c", l.WorkerID, l.Token, time.Minute, reserved); err != nil {
				t.Fatal(err)
			}
			const epoch = int64(1_767_225_600_000)
			if err := from.CheckLayout(ctx, "c", epoch, 10); err != nil {
				t.Fatal(err)
			}
			to := target.Open(t)
			for i := 0; i < 2; i++ { // twice: idempotent
				if err := migrateLeases(ctx, from.(leaseHistory), to.(leaseHistory), func(string) {}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := to.Acquire(ctx, workerlease.AcquireRequest{Cluster: "c", MaxWorkerID: 0, Token: strings.Repeat("B", 22), TTL: time.Minute, NowMS: reserved + 1})
			if err != nil {
				t.Fatal(err)
			}
			if got.WorkerID != l.WorkerID || got.LastTimestampMS != reserved {
				t.Fatalf("target lease got worker %d last_timestamp_ms %d, want worker %d and %d", got.WorkerID, got.LastTimestampMS, l.WorkerID, reserved)
			}
			// The cluster's layout came along: another one is refused there.
			if err := to.CheckLayout(ctx, "c", epoch, 8); !errors.Is(err, workerlease.ErrLayoutMismatch) {
				t.Fatalf("target CheckLayout with other worker bits = %v, want ErrLayoutMismatch", err)
			}
		})
	}
}
