// Package alloctest holds what the tests of segment allocators share:
// draining IDs, one caller's run checked to increase and many callers' at
// once checked never to repeat, reading a tag's step, waiting for a
// condition and forcing a tag-list reload. segment's tests use it on fault
// stores, store's on every engine.
//
// It is imported by tests only.
package alloctest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"

	"github.com/idalloc/idalloc/segment"
)

// New is segment.New on st, failing tb on an error, closed when tb ends.
func New(tb testing.TB, st segment.Store, cfg segment.Config) *segment.Allocator {
	tb.Helper()
	a, err := segment.New(context.Background(), st, cfg)
	if err != nil {
		tb.Fatalf("segment.New: %v", err)
	}
	tb.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

// Drain takes n IDs of tag from a, one Next at a time, and returns them; an
// error names the call that failed or an ID that did not increase.
func Drain(a *segment.Allocator, tag string, n int) ([]int64, error) {
	ids := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		id, err := a.Next(context.Background(), tag)
		if err != nil {
			return ids, fmt.Errorf("id %d: %w", i, err)
		}
		if len(ids) > 0 && id <= ids[len(ids)-1] {
			return ids, fmt.Errorf("id %d: got %d after %d, want strictly increasing", i, id, ids[len(ids)-1])
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// DrainConcurrently runs workers goroutines each taking n IDs of tag (Drain) from
// its allocator, allocs[i%len(allocs)], fails t on an error or a
// duplicate, and returns the IDs taken.
func DrainConcurrently(t testing.TB, allocs []*segment.Allocator, tag string, workers, n int) map[int64]bool {
	t.Helper()
	results := make(chan []int64, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(a *segment.Allocator) {
			defer wg.Done()
			ids, err := Drain(a, tag, n)
			if err != nil {
				errs <- err
			}
			results <- ids
		}(allocs[w%len(allocs)])
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := make(map[int64]bool, workers*n)
	for ids := range results {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = true
		}
	}
	if got, want := len(seen), workers*n; got != want {
		t.Fatalf("got %d unique IDs, want %d", got, want)
	}
	return seen
}

// Step is tag's current step in a, -1 when a does not serve tag.
func Step(a *segment.Allocator, tag string) int64 {
	for _, s := range a.Stats() {
		if s.AppTag == tag {
			return s.Step
		}
	}
	return -1
}

// WaitFor fails tb unless cond holds within 5 s, polling every millisecond.
func WaitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// ReloadOnMiss makes a reload of a's tag list happen now: past the least
// gap between reloads on a's clock, a miss reloads.
func ReloadOnMiss(tb testing.TB, a *segment.Allocator, clock *testclock.Clock) {
	tb.Helper()
	clock.Add(time.Second)
	if _, err := a.Next(context.Background(), "no_such_tag"); !errors.Is(err, segment.ErrUnknownTag) {
		tb.Fatalf("Next(no_such_tag) = %v, want ErrUnknownTag", err)
	}
}
