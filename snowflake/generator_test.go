package snowflake

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

func TestNextSequenceExhaustionWaitsToNextMS(t *testing.T) {
	for _, bits := range []int{10, 16, 21} {
		t.Run(fmt.Sprintf("worker bits %d", bits), func(t *testing.T) {
			c := testclock.New(t0)
			g := newFakeGenerator(t, c, Settings{WorkerBits: bits, WorkerID: 1, DisableRandomStart: true})
			ms := t0.UnixMilli()
			capacity := g.Layout().MaxSequence() + 1
			for want := range capacity {
				id, err := g.Next()
				if err != nil {
					t.Fatal(err)
				}
				if p := mustDecompose(t, g, id); p.TimestampMS != ms || p.Sequence != want || p.WorkerID != 1 {
					t.Fatalf("ID %d = %+v, want timestamp %d, sequence %d, worker 1", want, p, ms, want)
				}
			}
			if w := c.Waits(); len(w) != 0 {
				t.Fatalf("waits before the sequence ran out = %v, want none", w)
			}
			id, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			// t0 is 250µs into its millisecond: exactly 750µs to the next.
			if w := c.Waits(); !slices.Equal(w, []time.Duration{750 * time.Microsecond}) {
				t.Errorf("waits = %v, want [750µs]", w)
			}
			if p := mustDecompose(t, g, id); p.TimestampMS != ms+1 || p.Sequence != 0 {
				t.Errorf("ID after the wait = %+v, want timestamp %d, sequence 0", p, ms+1)
			}
		})
	}
}

func TestRandomStart(t *testing.T) {
	tests := []struct {
		workerBits int
		disable    bool
		bound      int64 // starts lie in [0, bound)
	}{
		{10, false, 100}, // 4096 per ms: the full 100
		{15, false, 64},  // 128 per ms: half of it
		{16, false, 32},  // 64 per ms
		{20, false, 2},   // 4 per ms
		{21, false, 1},   // 2 per ms: no room to spread, always 0
		{10, true, 1},
		{16, true, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("worker bits %d disabled %v", tt.workerBits, tt.disable), func(t *testing.T) {
			c := testclock.New(t0)
			g := newFakeGenerator(t, c, Settings{WorkerBits: tt.workerBits, DisableRandomStart: tt.disable})
			seen := make(map[int64]int)
			for range 5000 {
				c.Add(time.Millisecond)
				id, err := g.Next()
				if err != nil {
					t.Fatal(err)
				}
				start := mustDecompose(t, g, id).Sequence
				if start >= tt.bound {
					t.Fatalf("first sequence of a millisecond = %d, want below %d", start, tt.bound)
				}
				seen[start]++
				// The rest of the millisecond counts on from the start.
				id2, err := g.Next()
				if err != nil {
					t.Fatal(err)
				}
				if p := mustDecompose(t, g, id2); p.Sequence != start+1 || id2 != id+1 {
					t.Fatalf("second ID of a millisecond = %+v, want sequence %d", p, start+1)
				}
			}
			// 5000 draws below 100 miss a value with odds of 100*(0.99^5000).
			if int64(len(seen)) != tt.bound {
				t.Errorf("distinct starts = %d, want all %d", len(seen), tt.bound)
			}
		})
	}
}

func TestRandomStartUsesInjectedRand(t *testing.T) {
	c := testclock.New(t0)
	draws := []uint64{0, 99, 100, 1<<64 - 1}
	i := 0
	g := newFakeGenerator(t, c, Settings{Rand: func() uint64 { i++; return draws[i-1] }})
	for _, want := range []int64{0, 99, 0, 15} { // (2^64-1) % 100 = 15
		c.Add(time.Millisecond)
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got := mustDecompose(t, g, id).Sequence; got != want {
			t.Errorf("start = %d, want %d", got, want)
		}
	}
}

func TestFence(t *testing.T) {
	c := testclock.New(t0)
	allow := false
	type call struct {
		now    time.Time
		unixMS int64
	}
	var calls []call
	g := newFakeGenerator(t, c, Settings{WorkerID: 9, Fence: func(now time.Time, unixMS int64) bool {
		calls = append(calls, call{now, unixMS})
		return allow
	}})
	if id, err := g.Next(); !errors.Is(err, ErrFenced) || id != 0 {
		t.Fatalf("Next with the fence closed = %d, %v, want 0, %v", id, err, ErrFenced)
	}
	if got := g.LastTimestampMS(); got != 0 {
		t.Errorf("LastTimestampMS after a fenced call = %d, want 0: a refused ID must not move the state", got)
	}
	allow = true
	c.Add(300 * time.Microsecond)
	var ids []int64
	for range 3 {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(calls) != 4 {
		t.Fatalf("fence calls = %d, want one per attempt (4)", len(calls))
	}
	for i, id := range ids {
		p := mustDecompose(t, g, id)
		if got := calls[i+1]; !got.now.Equal(c.Now()) || got.unixMS != p.TimestampMS {
			t.Errorf("fence call %d = (%v, %d), want (%v, %d): the clock reading and the ID's timestamp",
				i+1, got.now, got.unixMS, c.Now(), p.TimestampMS)
		}
	}
	// A refusal in the middle of a millisecond leaves the sequence where it was.
	allow = false
	if _, err := g.Next(); !errors.Is(err, ErrFenced) {
		t.Fatalf("Next with the fence closed again: %v, want %v", err, ErrFenced)
	}
	allow = true
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	if id != ids[2]+1 {
		t.Errorf("ID after a refusal = %d, want %d (the next sequence, none skipped)", id, ids[2]+1)
	}
}

func TestNextN(t *testing.T) {
	c := testclock.New(t0)
	g := newFakeGenerator(t, c, Settings{WorkerBits: 16, WorkerID: 5})
	first, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]int64, 1000) // 64 per ms: spans many milliseconds
	if err := g.NextN(dst); err != nil {
		t.Fatal(err)
	}
	prev := first
	for i, id := range dst {
		if id <= prev {
			t.Fatalf("dst[%d] = %d, want above %d", i, id, prev)
		}
		prev = id
	}
	if len(c.Waits()) == 0 {
		t.Error("no waits: want the batch to wait out used-up milliseconds")
	}
	if err := g.NextN(nil); err != nil {
		t.Errorf("NextN(nil) = %v, want nil", err)
	}
	if got, want := g.LastTimestampMS(), mustDecompose(t, g, prev).TimestampMS; got != want {
		t.Errorf("LastTimestampMS() = %d, want %d", got, want)
	}
}

func TestNextNFencedMidway(t *testing.T) {
	c := testclock.New(t0)
	n := 0
	g := newFakeGenerator(t, c, Settings{Fence: func(time.Time, int64) bool { n++; return n <= 5 }})
	dst := make([]int64, 10)
	if err := g.NextN(dst); !errors.Is(err, ErrFenced) {
		t.Fatalf("NextN = %v, want %v", err, ErrFenced)
	}
	if !slices.Equal(dst, make([]int64, 10)) {
		t.Errorf("dst after an error = %v, want cleared", dst)
	}
}

func TestTimeExhausted(t *testing.T) {
	end := time.UnixMilli(defaultEpochMS + 1<<41).UTC()
	c := testclock.New(end.AddDate(-10, 0, 0))
	g := newFakeGenerator(t, c, Settings{WorkerBits: 21, DisableRandomStart: true})

	c.Set(end.Add(-time.Millisecond)) // the last millisecond the bits carry
	for range 2 {
		if _, err := g.Next(); err != nil {
			t.Fatalf("Next in the last millisecond: %v", err)
		}
	}
	if _, err := g.Next(); !errors.Is(err, ErrTimeExhausted) {
		t.Errorf("Next with the last millisecond used up = %v, want %v", err, ErrTimeExhausted)
	}
	c.Set(end)
	if _, err := g.Next(); !errors.Is(err, ErrTimeExhausted) {
		t.Errorf("Next at End = %v, want %v", err, ErrTimeExhausted)
	}
}

func TestLastTimestampMS(t *testing.T) {
	c := testclock.New(t0)
	floor := t0.UnixMilli() - 5000
	g := newFakeGenerator(t, c, Settings{StartAfterMS: floor})
	if got := g.LastTimestampMS(); got != floor {
		t.Errorf("LastTimestampMS() before any ID = %d, want the floor %d", got, floor)
	}
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	if got := g.LastTimestampMS(); got != t0.UnixMilli() {
		t.Errorf("LastTimestampMS() = %d, want %d", got, t0.UnixMilli())
	}
}

func TestParallelUniqueness(t *testing.T) {
	const goroutines, perGoroutine = 8, 20000
	g, err := New(Settings{WorkerID: 77}) // the real clock
	if err != nil {
		t.Fatal(err)
	}
	results := make([][]int64, goroutines)
	errc := make(chan error, goroutines)
	withTimeout(t, time.Minute, func() {
		var wg sync.WaitGroup
		for w := range goroutines {
			wg.Go(func() {
				ids := make([]int64, 0, perGoroutine+perGoroutine/50)
				batch := make([]int64, 3)
				for i := range perGoroutine {
					got := batch[:1]
					var err error
					if i%100 == 0 { // mix in batches
						got = batch
						err = g.NextN(got)
					} else {
						got[0], err = g.Next()
					}
					if err != nil {
						errc <- fmt.Errorf("goroutine %d, call %d: %w", w, i, err)
						return
					}
					for _, id := range got {
						if n := len(ids); n > 0 && id <= ids[n-1] {
							errc <- fmt.Errorf("goroutine %d: ID %d after %d, want increasing", w, id, ids[n-1])
							return
						}
						ids = append(ids, id)
					}
				}
				results[w] = ids
			})
		}
		wg.Wait()
	})
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	seen := make(map[int64]struct{}, goroutines*perGoroutine)
	for _, ids := range results {
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = struct{}{}
		}
	}
	if p := mustDecompose(t, g, g.lastIDForTest()); p.WorkerID != 77 {
		t.Errorf("worker ID = %d, want 77", p.WorkerID)
	}
}

// lastIDForTest returns the last ID issued.
func (g *Generator) lastIDForTest() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.compose(g.lastMS, g.seq)
}
