// Package layouttest is the conformance suite of Recorder
// (Recorder here, so that the lease adapters' tests need not import
// leased): the cases every lease store of this module passes for the
// snowflake layouts it keeps beside its leases. It runs on the stores' leasetest
// targets, since a layout record lives and is forgotten with the leases:
//
//	tg := leasetest.Target{…}
//	leasetest.Run(t, tg)
//	layouttest.Run(t, tg)
//
// The cases prove what one layout per cluster rests on: a cluster keeps the
// layout it was first used with and refuses another from any handle
// (snowflake.ErrLayoutMismatch); a store that forgets its leases forgets
// the layout too, and no handle remembers it, which is why each new lease
// checks the layout again; and an unreachable store is an outage, never a
// mismatch, which would stop an instance rather than let it retry.
package layouttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

const epoch = int64(1_767_225_600_000) // 2026-01-01, the default

// Recorder is Recorder: a store's record of each cluster's
// snowflake layout.
type Recorder interface {
	CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error
}

// Run runs every case in parallel, each on a fresh namespace of tg, whose
// handles must be Recorders. It skips t when the store cannot
// run here.
func Run(t *testing.T, tg leasetest.Target) {
	tg.Fresh(t) // a probe: skips the whole suite in one line
	cases := []struct {
		name string
		test func(t *testing.T, ns leasetest.Namespace)
	}{
		{"a cluster keeps the layout it was first used with", testKeepsFirst},
		{"a store that forgets its leases forgets the layout", testForgets},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, tg.Fresh(t))
		})
	}
	if tg.Unreachable != nil {
		t.Run("an unreachable store is an outage, not a mismatch", func(t *testing.T) {
			t.Parallel()
			testUnreachable(t, recorder(t, tg.Unreachable(t)))
		})
	}
}

// recorder returns st's layout record, failing t if st keeps none.
func recorder(t *testing.T, st workerlease.Store) Recorder {
	t.Helper()
	rec, ok := st.(Recorder)
	if !ok {
		t.Fatalf("%T has no CheckLayout(ctx, cluster, epochMS, workerBits): "+
			"every lease store of an idalloc cluster records its snowflake layouts", st)
	}
	return rec
}

// check fails t unless rec's CheckLayout answers want (nil, or an error
// wrapping it).
func check(t *testing.T, rec Recorder, cluster string, epochMS int64, bits int, want error) {
	t.Helper()
	if err := rec.CheckLayout(t.Context(), cluster, epochMS, bits); !errors.Is(err, want) {
		t.Errorf("CheckLayout(%s, %d, %d) = %v, want %v", cluster, epochMS, bits, err, want)
	}
}

func testKeepsFirst(t *testing.T, ns leasetest.Namespace) {
	rec := recorder(t, ns.Open(t))
	for _, c := range []struct {
		cluster string
		epochMS int64
		bits    int
		want    error
	}{
		{"layout-a", epoch, 10, nil},
		{"layout-a", epoch, 10, nil}, // the same again: fine
		{"layout-a", epoch, 8, snowflake.ErrLayoutMismatch},
		{"layout-a", epoch + 86_400_000, 10, snowflake.ErrLayoutMismatch},
		{"layout-b", epoch, 8, nil}, // clusters are independent
		{"layout-b", epoch, 8, nil},
		// A JS53 layout's record (leased: 100 + worker bits) is kept as
		// any other, and refuses the default layout of the same worker
		// bits, and the other way round.
		{"layout-js", epoch, 106, nil},
		{"layout-js", epoch, 106, nil},
		{"layout-js", epoch, 6, snowflake.ErrLayoutMismatch},
		{"layout-b", epoch, 108, snowflake.ErrLayoutMismatch},
	} {
		check(t, rec, c.cluster, c.epochMS, c.bits, c.want)
	}
	// Another handle, as another instance, sees the same record.
	check(t, recorder(t, ns.Open(t)), "layout-a", epoch, 12, snowflake.ErrLayoutMismatch)
}

// testForgets: after the store forgets, the next layout checked is the
// cluster's, even through a handle that checked the old one. A holder of
// the old layout learns of it at its next grant (leased.CheckEachLease).
func testForgets(t *testing.T, ns leasetest.Namespace) {
	old := recorder(t, ns.Open(t))
	check(t, old, "c1", epoch, 10, nil)
	ns.Forget(t)
	check(t, old, "c1", epoch, 8, nil)
	check(t, old, "c1", epoch, 10, snowflake.ErrLayoutMismatch)
	check(t, recorder(t, ns.Open(t)), "c1", epoch, 10, snowflake.ErrLayoutMismatch)
}

// testUnreachable: CheckLayout on a store that does not answer ends within
// its deadline with an error that is no mismatch: the layout gate retries
// it.
func testUnreachable(t *testing.T, rec Recorder) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	start := time.Now()
	err := rec.CheckLayout(ctx, "c1", epoch, 10)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("CheckLayout on an unreachable store took %v, past its 3s deadline", took)
	}
	if err == nil || errors.Is(err, snowflake.ErrLayoutMismatch) {
		t.Errorf("CheckLayout on an unreachable store: error = %v, want an outage, not nil or %v", err, snowflake.ErrLayoutMismatch)
	}
}
