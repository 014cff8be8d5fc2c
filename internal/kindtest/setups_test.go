package kindtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// The setups: each puts a started instance in the state that produces
// its row's kind.

// stopStore: the store unreachable, and nothing buffered.
func stopStore(_ *testing.T, in *instance) { in.store.Down.Store(true) }

// closeAllocator: the allocator closed, as the instance stopping does.
func closeAllocator(t *testing.T, in *instance) {
	if err := in.seg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// clockBack: snowflake IDs issued, then the clock set back by more than
// MaxDriftBlock (10ms, waited out) and less than MaxDriftError (1s, which
// stops the generator).
func clockBack(t *testing.T, in *instance) {
	in.keeper.Start(context.Background())
	waitFor(t, "a snowflake ID", func() bool { _, err := in.flake.Next(); return err == nil })
	in.clock.Add(-100 * time.Millisecond)
}

// fillCluster: every worker ID held by others when the keeper starts.
func fillCluster(t *testing.T, in *instance) {
	for range maxWorkerID + 1 {
		in.acquire(t)
	}
	in.keeper.Start(context.Background())
	waitFor(t, "the keeper to find every worker ID held", in.keeper.NoFreeWorkerID)
}

// holdLease: a worker ID held by another holder; the request names it
// with a token of its own.
func holdLease(t *testing.T, in *instance) { in.lease = in.acquire(t) }

// expireLease: a lease the database's clock has seen expire, renewed with
// its own token.
func expireLease(t *testing.T, in *instance) {
	in.lease = in.acquire(t)
	// SQLite keeps expires_at in Unix milliseconds; tokens are base64url.
	in.db.Exec(t, fmt.Sprintf(`UPDATE worker_leases SET expires_at = 1 WHERE token = '%s'`, in.lease.Token))
}

// spendTag: a tag whose last ID has been issued.
func spendTag(t *testing.T, in *instance) {
	ctx := context.Background()
	last := int64(segment.MaxUsableID)
	if _, err := in.seg.CreateTag(ctx, segment.NewTag{AppTag: "spent", Step: 1, Start: &last}); err != nil {
		t.Fatal(err)
	}
	if id, err := in.seg.Next(ctx, "spent"); err != nil || id != last {
		t.Fatalf("the tag's last ID: got %d, %v; want %d", id, err, last)
	}
}

// spendPeriod: a dated tag of one number a year, its number issued.
func spendPeriod(t *testing.T, in *instance) {
	ctx := context.Background()
	start := int64(9)
	if _, err := in.seg.CreateTag(ctx, segment.NewTag{AppTag: "spent_period", Format: segment.FormatDated,
		Period: dated.Year, Length: 1, Start: &start, Step: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.seg.Next(ctx, "spent_period"); err != nil {
		t.Fatalf("the period's one number: %v", err)
	}
}

// waitFor polls cond until it holds, failing t after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
	}
}
