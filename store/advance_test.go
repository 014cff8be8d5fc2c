package store_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idalloc/idalloc/advance"
	"github.com/idalloc/idalloc/internal/advancetest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// advancing is a store handle with the advance methods.
type advancing interface {
	store.Store
	advance.Segments
	advance.Leases
	ObserveConflicts(func(op string))
}

func open(tb testing.TB, db storetest.DB) advancing {
	tb.Helper()
	return db.Open(tb).(advancing)
}

func TestAdvanceTag(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st := open(t, d.NewDB(t))
			ctx := t.Context()
			if err := st.CreateTag(ctx, segment.Tag{AppTag: "order", Step: 100, Start: 1201}); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name             string
				tag              string
				by               int64
				wantFrom, wantTo int64
				wantErr          error // nil: moved
			}{
				{"moves by the count", "order", 5_000_000, 1200, 5_001_200, nil},
				{"moves again from the new value", "order", 10, 5_001_200, 5_001_210, nil},
				{"an unknown tag", "nope", 10, 0, 0, segment.ErrUnknownTag},
				{"a count below 1", "order", 0, 0, 0, errAny},
				{"past the largest max_id", "order", 1<<63 - 100, 0, 0, segment.ErrExhausted},
			} {
				from, to, err := st.AdvanceTag(ctx, tc.tag, tc.by)
				switch {
				case tc.wantErr == nil && err != nil:
					t.Errorf("%s: AdvanceTag(%q, %d): %v", tc.name, tc.tag, tc.by, err)
				case tc.wantErr != nil && (err == nil || tc.wantErr != errAny && !errors.Is(err, tc.wantErr)):
					t.Errorf("%s: AdvanceTag(%q, %d) error = %v, want %v", tc.name, tc.tag, tc.by, err, tc.wantErr)
				case from != tc.wantFrom || to != tc.wantTo:
					t.Errorf("%s: AdvanceTag(%q, %d) = %d → %d, want %d → %d", tc.name, tc.tag, tc.by, from, to, tc.wantFrom, tc.wantTo)
				}
			}
			if f, err := st.Fetch(ctx, "order", segment.MaxUsableID, 0); err != nil || f.MaxID != 5_001_310 {
				t.Errorf("Fetch after the advances = %+v, %v; want max_id 5001310 (the range after them)", f, err)
			}
		})
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

// TestAdvanceTagRacesFetches: fetchers with handles of their own take
// ranges while advances move the same row. Every range fetched or skipped
// by an advance is disjoint from every other, and together they tile the
// row from its start to its final max_id: nothing was handed out twice
// and max_id never went back.
func TestAdvanceTagRacesFetches(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.NewDB(t)
			setup := open(t, db)
			if err := setup.CreateTag(t.Context(), segment.Tag{AppTag: "race", Step: 10}); err != nil {
				t.Fatal(err)
			}
			const fetchers, fetches, advancers, advances, by = 4, 40, 2, 10, 1000
			type span struct{ from, to int64 }
			var mu sync.Mutex
			var spans []span
			var wg sync.WaitGroup
			var lost atomic.Int64 // races the advances lost and retried
			errs := make(chan error, fetchers+advancers)
			for range fetchers {
				st := open(t, db)
				wg.Go(func() {
					for range fetches {
						f, err := st.Fetch(t.Context(), "race", segment.MaxUsableID, 0)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						spans = append(spans, span{f.MaxID - f.Size, f.MaxID})
						mu.Unlock()
					}
				})
			}
			for range advancers {
				st := open(t, db)
				st.ObserveConflicts(func(op string) {
					if op == "advance" {
						lost.Add(1)
					}
				})
				wg.Go(func() {
					for range advances {
						from, to, err := st.AdvanceTag(t.Context(), "race", by)
						if err != nil {
							errs <- err
							return
						}
						if to-from != by {
							errs <- fmt.Errorf("advance moved %d → %d, want by %d", from, to, by)
						}
						mu.Lock()
						spans = append(spans, span{from, to})
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
			at := int64(0) // CreateTag's start 1: max_id 0
			for _, s := range spans {
				if s.from != at {
					t.Fatalf("span (%d, %d] follows max_id %d: a gap or an overlap", s.from, s.to, at)
				}
				at = s.to
			}
			want := int64(fetchers*fetches*10 + advancers*advances*by)
			if at != want {
				t.Errorf("spans end at %d, want %d", at, want)
			}
			tags, err := setup.Tags(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range tags {
				if tg.AppTag == "race" && tg.MaxID != at {
					t.Errorf("max_id = %d, want %d, the end of the last span", tg.MaxID, at)
				}
			}
			t.Logf("%s: %d fetches and %d advances on one row (the advances lost %d races and moved again from the new value): ranges disjoint and contiguous up to %d",
				d.Name, fetchers*fetches, advancers*advances, lost.Load(), at)
		})
	}
}

func TestAdvanceLeases(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			advancetest.Leases(t, func(tb testing.TB) advancetest.Store { return open(tb, d.NewDB(tb)) })
		})
	}
}
