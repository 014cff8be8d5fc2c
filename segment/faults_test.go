package segment_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

func TestStoreFailsAfterFirstFetch(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100})
	st.failAfter.Store(1)
	a := alloctest.New(t, st, segment.Config{})
	ids, err := alloctest.Drain(a, "t", 100)
	if err != nil {
		t.Fatalf("buffered IDs with the store failing: %v", err)
	}
	if got, want := ids[99], int64(100); got != want {
		t.Fatalf("last buffered ID got %d, want %d", got, want)
	}
	if _, err := a.Next(context.Background(), "t"); !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("drained with the store failing: got %v, want ErrUnavailable", err)
	}
	st.failAfter.Store(0)
	alloctest.WaitFor(t, func() bool { _, err := a.Next(context.Background(), "t"); return err == nil })
	id, err := a.Next(context.Background(), "t")
	if err != nil || id <= 100 {
		t.Fatalf("after recovery got %d, %v; want an ID above 100", id, err)
	}
}

func TestUnknownTagFloodIsBounded(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100})
	a := alloctest.New(t, st, segment.Config{})
	before := st.lists.Load()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10000/8; i++ {
				_, err := a.Next(context.Background(), fmt.Sprintf("nope-%d-%d", w, i))
				if !errors.Is(err, segment.ErrUnknownTag) {
					errs <- fmt.Errorf("unknown tag: got %v, want ErrUnknownTag", err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One reload a second at most; the flood takes well under a few seconds.
	if got := st.lists.Load() - before; got > 3 {
		t.Fatalf("10,000 unknown tags caused %d tag-list queries, want at most 3", got)
	}
	if got := st.fetches.Load(); got != 0 {
		t.Fatalf("unknown tags caused %d fetches, want 0", got)
	}
}

func TestInvalidTagNeverReachesStore(t *testing.T) {
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{})
	before := st.lists.Load()
	for _, tag := range []string{"", "a b", "x'; DROP TABLE segments; --", "é", string(make([]byte, 65))} {
		if _, err := a.Next(context.Background(), tag); !errors.Is(err, segment.ErrInvalidTag) {
			t.Errorf("Next(%q): got %v, want ErrInvalidTag", tag, err)
		}
	}
	if got := st.lists.Load() - before; got != 0 {
		t.Fatalf("invalid tags caused %d store queries, want 0", got)
	}
}

func TestNextNSpansSegments(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 7})
	a := alloctest.New(t, st, segment.Config{MaxStep: 7})
	other := make(chan error, 1)
	go func() { _, err := alloctest.Drain(a, "t", 3000); other <- err }()
	var prev int64
	dst := make([]int64, 1000)
	for round := 0; round < 5; round++ {
		if err := a.NextN(context.Background(), "t", dst); err != nil {
			t.Fatal(err)
		}
		for i, id := range dst {
			if id <= prev {
				t.Fatalf("round %d, index %d: got %d after %d, want strictly increasing", round, i, id, prev)
			}
			prev = id
		}
	}
	if err := <-other; err != nil {
		t.Fatal(err)
	}
}

func TestCreateTag(t *testing.T) {
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{MaxStep: 1000})
	cases := []struct {
		tag  segment.NewTag
		want error
	}{
		{segment.NewTag{AppTag: "bad tag", Step: 10}, segment.ErrInvalidTag},
		{segment.NewTag{AppTag: "zero", Step: 0}, segment.ErrInvalidStep},
		{segment.NewTag{AppTag: "big", Step: 1001}, segment.ErrInvalidStep},
		{segment.NewTag{AppTag: "neg", Step: 1, Start: new(int64(-5))}, segment.ErrInvalidStep},
		{segment.NewTag{AppTag: "order", Step: 10, Start: new(int64(500))}, nil},
		{segment.NewTag{AppTag: "order", Step: 10}, segment.ErrTagExists},
	}
	for _, c := range cases {
		if _, err := a.CreateTag(context.Background(), c.tag); !errors.Is(err, c.want) {
			t.Errorf("CreateTag(%+v): got %v, want %v", c.tag, err, c.want)
		}
	}
	id, err := a.Next(context.Background(), "order")
	if err != nil || id != 500 {
		t.Fatalf("first ID of a tag created with start 500: got %d, %v; want 500", id, err)
	}
}

func TestClosedAllocatorRefuses(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 10})
	a := alloctest.New(t, st, segment.Config{})
	if _, err := a.Next(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Next(context.Background(), "t"); !errors.Is(err, segment.ErrClosed) {
		t.Fatalf("after Close got %v, want ErrClosed", err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStoreFaultsAreUnavailable(t *testing.T) {
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{})
	st.failing.Store(true)
	if _, err := a.CreateTag(context.Background(), segment.NewTag{AppTag: "x", Step: 1}); !errors.Is(err, segment.ErrUnavailable) {
		t.Errorf("CreateTag with the store down: got %v, want ErrUnavailable", err)
	}
}

func TestNewRefusesNegativeConfig(t *testing.T) {
	for _, cfg := range []segment.Config{{MaxStep: -1}, {TagRefresh: -1}, {WaitTimeout: -1}, {FetchTimeout: -1}} {
		if _, err := segment.New(context.Background(), newFakeStore(), cfg); !errors.Is(err, segment.ErrInvalidConfig) {
			t.Errorf("New(%+v): got %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestDemandCutsBackoffShort: after a long outage the fetch loop's backoff
// has grown to seconds; requests arriving after the store is back must not
// wait that out (virtual time, testing/synctest).
func TestDemandCutsBackoffShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(segment.Tag{AppTag: "t", Step: 100})
		st.failAfter.Store(1)
		a := alloctest.New(t, st, segment.Config{})
		if _, err := alloctest.Drain(a, "t", 100); err != nil {
			t.Fatal(err)
		}
		for range 2000 { // 20s of requests every 10ms while the store is down
			if _, err := a.Next(context.Background(), "t"); !errors.Is(err, segment.ErrUnavailable) {
				t.Fatalf("store down: got %v, want ErrUnavailable", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		st.failAfter.Store(0)
		back := time.Now()
		for {
			if _, err := a.Next(context.Background(), "t"); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if took := time.Since(back); took > demandRetryBound {
			t.Fatalf("first ID %v after the store came back, want within %v", took, demandRetryBound)
		}
	})
}

// demandRetryBound is segment's demandRetry plus one request interval.
const demandRetryBound = 210 * time.Millisecond
