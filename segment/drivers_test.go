package segment_test

import (
	"context"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// These run the allocator's guarantees against every real store driver:
// SQLite always, MySQL and PostgreSQL when a server is available (see
// storetest).

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
			a := newAllocator(t, st, segment.Config{})
			concurrentDrain(t, []*segment.Allocator{a}, "step10", 64, 5000)
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
				allocs = append(allocs, newAllocator(t, db.Open(t), segment.Config{MaxStep: 7}))
			}
			concurrentDrain(t, allocs, "step7", 12, 2000)
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
			ids, err := drain(a, "test_business", 150)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			// Graceful: the next instance continues at the next ID.
			b := newAllocator(t, db.Open(t), segment.Config{})
			next, err := drain(b, "test_business", 150)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := next[0], ids[len(ids)-1]+1; got != want {
				t.Fatalf("after graceful Close got %d, want %d", got, want)
			}
			// Kill-style: b is abandoned without Close; c starts above all.
			c := newAllocator(t, db.Open(t), segment.Config{})
			after, err := drain(c, "test_business", 10)
			if err != nil {
				t.Fatal(err)
			}
			if after[0] <= next[len(next)-1] {
				t.Fatalf("after abandon got %d, want above %d", after[0], next[len(next)-1])
			}
		})
	}
}
