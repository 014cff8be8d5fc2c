package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// These run the allocator's guarantees against every real store driver:
// SQLite always, MySQL and PostgreSQL when a server is available (see
// storetest). They live here, not in segment, because they need the
// stores, and segment must import none, even in its tests.

func createTag(tb testing.TB, st segment.Store, tag string, step int64) {
	tb.Helper()
	if err := st.CreateTag(context.Background(), segment.Tag{AppTag: tag, Step: step, Start: 1}); err != nil {
		tb.Fatalf("create tag %q: %v", tag, err)
	}
}

func TestDriversConcurrent64Goroutines(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st := d.Open(t)
			createTag(t, st, "step10", 10)
			a := alloctest.New(t, st, segment.Config{})
			alloctest.DrainConcurrently(t, []*segment.Allocator{a}, "step10", 64, 5000)
		})
	}
}

// Several instances on one database is the MySQL and PostgreSQL
// deployment; the SQLite store is a single process's embedded file, whose
// busy-wait backoff between processes is not built for a fetch every 7 IDs.
func TestThreeAllocatorsOneDatabase(t *testing.T) {
	for _, d := range []storetest.Driver{storetest.MySQL(), storetest.Postgres()} {
		t.Run(d.Name, func(t *testing.T) {
			db := d.NewDB(t)
			createTag(t, db.Open(t), "step7", 7)
			var allocs []*segment.Allocator
			for i := 0; i < 3; i++ {
				// Separate handles: separate connections, as separate instances have.
				allocs = append(allocs, alloctest.New(t, db.Open(t), segment.Config{MaxStep: 7}))
			}
			alloctest.DrainConcurrently(t, allocs, "step7", 12, 2000)
		})
	}
}

func TestDriversRestart(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.NewDB(t)
			st := db.Open(t)
			ctx := context.Background()

			a, err := segment.New(ctx, st, segment.Config{})
			if err != nil {
				t.Fatal(err)
			}
			ids, err := alloctest.Drain(a, "test_business", 150)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			// Graceful: the next instance continues at the next ID.
			b := alloctest.New(t, db.Open(t), segment.Config{})
			next, err := alloctest.Drain(b, "test_business", 150)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := next[0], ids[len(ids)-1]+1; got != want {
				t.Fatalf("after graceful Close got %d, want %d", got, want)
			}
			// Kill-style: b is abandoned without Close; c starts above all.
			c := alloctest.New(t, db.Open(t), segment.Config{})
			after, err := alloctest.Drain(c, "test_business", 10)
			if err != nil {
				t.Fatal(err)
			}
			if after[0] <= next[len(next)-1] {
				t.Fatalf("after abandon got %d, want above %d", after[0], next[len(next)-1])
			}
		})
	}
}

// TestUpdateTagReachesEveryInstance: on every driver, a step changed
// through one allocator reaches another on the same database at its next
// tag-list reload, and the other's next fetch is at least that step; the
// change itself moves no max_id.
func TestUpdateTagReachesEveryInstance(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			db := d.NewDB(t)
			st := db.Open(t)
			createTag(t, st, "t", 10)
			cfg := segment.Config{TagRefresh: 20 * time.Millisecond}
			one, other := alloctest.New(t, db.Open(t), cfg), alloctest.New(t, db.Open(t), cfg)
			if _, err := other.Next(ctx, "t"); err != nil { // fetches (0, 10]
				t.Fatal(err)
			}
			if _, err := one.UpdateTag(ctx, "t", segment.TagChange{Step: new(int64(1000))}); err != nil {
				t.Fatal(err)
			}
			if m := storeMaxID(t, st, "t"); m != 10 {
				t.Errorf("max_id after the update %d, want 10 as before", m)
			}
			alloctest.WaitFor(t, func() bool {
				s, ok := other.Snapshot("t")
				return ok && s.RowStep == 1000 && other.Tags()[0].Step == 1000
			})
			seen := map[int64]bool{}
			for _, a := range []*segment.Allocator{other, one} {
				ids, err := alloctest.Drain(a, "t", 20)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					if seen[id] {
						t.Fatalf("duplicate ID %d", id)
					}
					seen[id] = true
				}
			}
			if s := alloctest.Step(other, "t"); s < 1000 {
				t.Errorf("the other allocator's fetch after the reload took %d, want at least the new step 1000", s)
			}
		})
	}
}

func storeMaxID(tb testing.TB, st segment.Store, tag string) int64 {
	tb.Helper()
	tags, err := st.Tags(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, tg := range tags {
		if tg.AppTag == tag {
			return tg.MaxID
		}
	}
	tb.Fatalf("no tag %q in the store", tag)
	return 0
}

// TestCreateTagsOnEveryDriver: a bulk create on a real store, of more tags
// than one store transaction takes, is served at once by the instance
// that made it, and by another on the same database after its next
// reload; an entry that existed is reported and its row left as it was.
func TestCreateTagsOnEveryDriver(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			db := d.NewDB(t)
			clock := testclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			other := alloctest.New(t, db.Open(t), segment.Config{TagRefresh: time.Hour, Now: clock.Now})
			a := alloctest.New(t, db.Open(t), segment.Config{})
			req := newTags(2500)
			req[1700].AppTag = "test_business"
			made, err := a.CreateTags(ctx, req)
			var exist *segment.TagsExistError
			if !errors.As(err, &exist) || !slices.Equal(exist.Index, []int{1700}) || len(made) != 2499 {
				t.Fatalf("CreateTags = %d tags, %v; want 2499 and test_business existing", len(made), err)
			}
			if id, err := a.Next(ctx, "c2499"); err != nil || id != 1 {
				t.Errorf("Next(c2499) here = %d, %v; want 1", id, err)
			}
			alloctest.ReloadOnMiss(t, other, clock)
			if got := len(other.Tags()); got != 2500 {
				t.Errorf("the other instance lists %d tags after a reload, want 2500", got)
			}
			if id, err := other.Next(ctx, "c0000"); err != nil || id != 1 {
				t.Errorf("Next(c0000) on the other instance = %d, %v; want 1", id, err)
			}
			for _, r := range other.Tags() {
				if r.AppTag == "test_business" && r.Step != 100000 {
					t.Errorf("test_business changed: %+v", r)
				}
			}
		})
	}
}

// newTags are n sequential tags to create, named c0000, c0001, …
func newTags(n int) []segment.NewTag {
	tags := make([]segment.NewTag, n)
	for i := range tags {
		tags[i] = segment.NewTag{AppTag: fmt.Sprintf("c%04d", i), Step: 100}
	}
	return tags
}
