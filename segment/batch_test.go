package segment_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// TestFailedBatchLeavesNoGap is the contract's "no gaps except segments lost
// in a crash": a batch the buffer cannot complete while the store fails
// claims nothing, so the IDs after it follow the last one issued.
func TestFailedBatchLeavesNoGap(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	st.failAfter.Store(1)
	a := alloctest.New(t, st, segment.Config{MaxStep: 10})
	ctx := context.Background()
	if id, err := a.Next(ctx, "t"); err != nil || id != 1 {
		t.Fatalf("first ID: %d, %v", id, err)
	}
	for _, n := range []int{15, 100} { // within two segments, and beyond
		if err := a.NextN(ctx, "t", make([]int64, n)); !errors.Is(err, segment.ErrUnavailable) {
			t.Fatalf("batch of %d with 9 buffered and the store down: got %v, want ErrUnavailable", n, err)
		}
	}
	if id, err := a.Next(ctx, "t"); err != nil || id != 2 {
		t.Fatalf("after the failed batches: %d, %v; want 2", id, err)
	}
	st.failAfter.Store(0)
	batch := make([]int64, 15)
	alloctest.WaitFor(t, func() bool { return a.NextN(ctx, "t", batch) == nil })
	want := make([]int64, 15)
	for i := range want {
		want[i] = int64(3 + i) // 3..10 from the first segment, 11..17 from the next
	}
	if !slices.Equal(batch, want) {
		t.Fatalf("batch across the two segments after failed attempts: %v, want %v", batch, want)
	}
}

// TestBatchesUnderFaultsLeaveNoGap: single IDs and batches, within two
// segments and beyond them (claimed whole all the same), from many
// goroutines, while the store fails on and off; after a graceful Close the
// IDs issued are exactly 1..N, and the store's max_id is N.
func TestBatchesUnderFaultsLeaveNoGap(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 50})
	a, err := segment.New(context.Background(), st, segment.Config{MaxStep: 50, WaitTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var flapper sync.WaitGroup
	flapper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				st.failing.Store(false)
				return
			case <-time.After(3 * time.Millisecond):
				st.failing.Store(i%3 == 0)
			}
		}
	})
	var mu sync.Mutex
	var issued []int64
	var failed int
	var wg sync.WaitGroup
	end := time.Now().Add(300 * time.Millisecond)
	for w := range 8 {
		wg.Go(func() {
			var mine []int64
			fails := 0
			dst := make([]int64, 1+w*29) // 1 to 204 IDs: within two segments of 50 and beyond
			for time.Now().Before(end) {
				if w%2 == 0 {
					if id, err := a.Next(context.Background(), "t"); err == nil {
						mine = append(mine, id)
					} else {
						fails++
					}
					continue
				}
				if err := a.NextN(context.Background(), "t", dst); err == nil {
					mine = append(mine, dst...)
				} else {
					fails++
				}
			}
			mu.Lock()
			issued = append(issued, mine...)
			failed += fails
			mu.Unlock()
		})
	}
	wg.Wait()
	close(stop)
	flapper.Wait()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(issued)
	for i, id := range issued {
		if id != int64(i+1) {
			t.Fatalf("%d IDs issued; the %dth is %d: a gap or a duplicate", len(issued), i+1, id)
		}
	}
	if got := st.maxID("t"); got != int64(len(issued)) {
		t.Fatalf("max_id after Close: %d, want %d (everything unused given back)", got, len(issued))
	}
	if failed == 0 {
		t.Fatal("no request failed: the store's faults were not exercised")
	}
	t.Logf("%d IDs issued, contiguous; %d requests failed", len(issued), failed)
}
