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
		if _, _, s, ok := b.claim(1); !ok {
			_ = b.advance(ctx, s)
			break
		}
	}
	// Each huge failed claim is pulled back by the slow path; without that,
	// 2^12 claims of 2^20 would wrap the cursor into negative IDs.
	for i := 0; i < 1<<13; i++ {
		first, _, s, ok := b.claim(1 << 20)
		if ok {
			t.Fatalf("claim %d succeeded at %d with the store down and the top reached", i, first)
		}
		_ = b.advance(ctx, s)
	}
}
