package segment

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// stubStore serves one tag with step 10 and counts fetches; fail makes every
// fetch fail.
type stubStore struct {
	maxID   atomic.Int64
	fetches atomic.Int64
	fail    atomic.Bool
}

func (s *stubStore) Fetch(context.Context, string, int64) (Fetched, error) {
	s.fetches.Add(1)
	if s.fail.Load() {
		return Fetched{}, errors.New("down")
	}
	return Fetched{MaxID: s.maxID.Add(10), Size: 10, Step: 10}, nil
}
func (s *stubStore) GiveBack(context.Context, string, int64, int64) (bool, error) { return false, nil }
func (s *stubStore) Tags(context.Context) ([]Tag, error)                          { return []Tag{{AppTag: "t", Step: 10}}, nil }
func (s *stubStore) CreateTag(context.Context, Tag) error                         { return nil }
func (s *stubStore) Ping(context.Context) error                                   { return nil }

func TestNoFetchStartsAfterClose(t *testing.T) {
	st := &stubStore{}
	a, err := New(context.Background(), st, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Next(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := st.fetches.Load()
	// A claim of the prefetch ID that lost the race with Close calls this late.
	(*a.tags.Load())["t"].prefetch()
	a.wg.Wait()
	if got := st.fetches.Load(); got != before {
		t.Fatalf("a prefetch after Close fetched: fetches went from %d to %d", before, got)
	}
}

func TestFailedClaimsCannotWrapTheCursor(t *testing.T) {
	st := &stubStore{}
	st.maxID.Store(MaxUsableID - 10) // the next segment ends at the very top
	a, err := New(context.Background(), st, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := context.Background()
	if _, err := a.Next(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	st.fail.Store(true)
	b := (*a.tags.Load())["t"]
	for {
		if _, err := a.Next(ctx, "t"); err != nil {
			break
		}
	}
	// Failed single claims push the cursor one past the end each, and the
	// slow path pulls it back; failed batches never move it (they claim by
	// compare-and-set). Without that, failures would wrap the cursor into
	// negative IDs.
	batch := make([]int64, 100_000)
	for i := 0; i < 1<<13; i++ {
		if _, err := a.Next(ctx, "t"); err == nil {
			t.Fatalf("Next %d succeeded with the store down and the top reached", i)
		}
		if err := a.NextN(ctx, "t", batch); err == nil {
			t.Fatalf("NextN %d succeeded with the store down and the top reached", i)
		}
	}
	if s := b.cur.Load(); s.cursor.Load() > s.end+1 {
		t.Fatalf("cursor %d is past the end %d + 1 after failed claims", s.cursor.Load(), s.end)
	}
}
