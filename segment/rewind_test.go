package segment_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// rewindObserver records the fetch errors the allocator reports.
type rewindObserver struct {
	mu      sync.Mutex
	refused int
}

func (o *rewindObserver) Fetched(_ string, _ time.Duration, err error) {
	if errors.Is(err, segment.ErrRewound) {
		o.mu.Lock()
		o.refused++
		o.mu.Unlock()
	}
}
func (*rewindObserver) GaveBack(string, int64)                    {}
func (*rewindObserver) Wasted(string, int64, segment.WasteReason) {}

func (o *rewindObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused
}

// TestRewoundStoreIsRefused: a store whose max_id went back (a primary
// promoted by a failover without the last updates) hands out ranges this
// instance had already received. None of them is issued: requests get
// ErrUnavailable, the observer sees ErrRewound, and service resumes only
// with a range above everything received before.
func TestRewoundStoreIsRefused(t *testing.T) {
	const step = 10
	st := newFakeStore(segment.Tag{AppTag: "t", Step: step})
	obs := &rewindObserver{}
	a := alloctest.New(t, st, segment.Config{MaxStep: step, WaitTimeout: 50 * time.Millisecond, Observer: obs})
	ctx := context.Background()

	// Take the first segment and let the prefetch of the second land.
	ids, err := alloctest.Drain(a, "t", 5)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for st.maxID("t") != 2*step {
		if time.Now().After(deadline) {
			t.Fatalf("max_id = %d, want %d after the prefetch", st.maxID("t"), 2*step)
		}
		time.Sleep(time.Millisecond)
	}
	highest := int64(2 * step) // this instance has received (0, 20]

	// The failover: the store forgets the last fetch and one before it.
	st.mu.Lock()
	st.rows["t"].MaxID = 5
	st.mu.Unlock()

	seen := map[int64]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	last := ids[len(ids)-1]
	unavailable := 0
	for last <= highest+step {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("no ID above %d after the rewind (last %d, %d unavailable answers)", highest, last, unavailable)
		}
		id, err := a.Next(ctx, "t")
		if errors.Is(err, segment.ErrUnavailable) {
			unavailable++
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if seen[id] || id <= last {
			t.Fatalf("got %d after %d (duplicate or not increasing)", id, last)
		}
		// After the rewind the store hands out (5, 15], then (15, 25]:
		// both start inside what was received, so 21..25 must never come.
		if id > highest && id <= 25 {
			t.Fatalf("got %d from a range starting at or below %d, which this instance had received", id, highest)
		}
		seen[id], last = true, id
	}
	if obs.count() == 0 {
		t.Errorf("observer saw no ErrRewound; want the overlapping ranges refused")
	}
	if unavailable == 0 {
		t.Errorf("no request was answered ErrUnavailable while the store handed out old ranges")
	}
	t.Logf("refused fetches: %d, unavailable answers: %d, IDs issued: %d", obs.count(), unavailable, len(seen))
}
