package segment

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// stubStore serves one tag with step 10 and counts fetches; fail makes every
// fetch fail.
type stubStore struct {
	maxID   atomic.Int64
	fetches atomic.Int64
	fail    atomic.Bool
}

func (s *stubStore) Fetch(context.Context, string, int64, int64) (Fetched, error) {
	s.fetches.Add(1)
	if s.fail.Load() {
		return Fetched{}, errors.New("down")
	}
	return Fetched{MaxID: s.maxID.Add(10), Size: 10, Step: 10}, nil
}
func (s *stubStore) GiveBack(context.Context, string, int64, int64) (bool, error) { return false, nil }
func (s *stubStore) Tags(context.Context) ([]Tag, error)                          { return []Tag{{AppTag: "t", Step: 10}}, nil }
func (s *stubStore) CreateTag(context.Context, Tag) error                         { return nil }
func (s *stubStore) CreateTags(_ context.Context, tags []Tag) ([]bool, error) {
	return make([]bool, len(tags)), nil
}

// TagsSince answers the one row as changed, whatever it is asked.
func (s *stubStore) TagsSince(context.Context, time.Time, string, int) ([]Tag, time.Time, error) {
	return []Tag{{AppTag: "t", Step: 10}}, time.Now(), nil
}
func (s *stubStore) Ping(context.Context) error { return nil }

func (s *stubStore) UpdateTag(context.Context, string, TagChange) (Tag, error) {
	return Tag{}, errors.New("not kept")
}

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
	a.index.get("t").prefetch()
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
	b := a.index.get("t")
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

// stallStore is a stubStore whose fetches wait for release, whatever their
// context says: a store call that overruns.
type stallStore struct {
	stubStore
	release chan struct{}
}

func (s *stallStore) Fetch(ctx context.Context, tag string, limit, step int64) (Fetched, error) {
	<-s.release
	return s.stubStore.Fetch(ctx, tag, limit, step)
}

// TestCloseHonoursItsDeadline: Close waits for a fetch under way only until
// its context ends (the stop's shutdown_timeout), then returns.
func TestCloseHonoursItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stallStore{release: make(chan struct{})}
		a, err := New(context.Background(), st, Config{})
		if err != nil {
			t.Fatal(err)
		}
		go a.Next(context.Background(), "t") // starts a fetch, which stalls
		synctest.Wait()

		closed := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			closed <- a.Close(ctx)
		}()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case err := <-closed:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Close at its deadline: got %v, want an error wrapping DeadlineExceeded", err)
			}
		default:
			t.Errorf("Close still waiting for the stalled fetch at its deadline")
		}
		close(st.release)
		synctest.Wait()
	})
}

// clockedStore is a stubStore that records when each fetch came.
type clockedStore struct {
	stubStore
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (s *clockedStore) Fetch(ctx context.Context, tag string, limit, step int64) (Fetched, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Since(s.start))
	s.mu.Unlock()
	return s.stubStore.Fetch(ctx, tag, limit, step)
}

// TestFetchRetriesAreJittered: the fetch loop waits backoff/2 plus a random
// part of up to backoff/2 (50ms doubling to 5s), so that tags and instances
// that failed together do not retry together. The draws are fixed here, at
// either end, so the test does not depend on chance or on timing (virtual
// time).
func TestFetchRetriesAreJittered(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name  string
		randN func(n time.Duration) time.Duration
		want  []time.Duration
	}{
		// Waits 25, 50, 100, … ms: half the backoff, down to 2.5s at the cap.
		{"lowest draw", func(time.Duration) time.Duration { return 0 }, ms(0, 25, 75, 175, 375, 775, 1575, 3175, 5675, 8175)},
		// Waits 50, 100, 200, … ms: the whole backoff, as before jitter.
		{"highest draw", func(n time.Duration) time.Duration { return n - 1 }, ms(0, 50, 150, 350, 750, 1550, 3150, 6350)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &clockedStore{start: time.Now()}
				st.fail.Store(true)
				a, err := New(context.Background(), st, Config{})
				if err != nil {
					t.Fatal(err)
				}
				a.randN = tt.randN // before the fetch loop starts
				if _, err := a.Next(context.Background(), "t"); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Next with the store down: got %v, want ErrUnavailable", err)
				}
				time.Sleep(9 * time.Second)
				synctest.Wait()
				if err := a.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				st.mu.Lock()
				defer st.mu.Unlock()
				if !slices.Equal(st.at, tt.want) {
					t.Errorf("fetches at %v, want %v", st.at, tt.want)
				}
			})
		})
	}
}
