// Package drain takes IDs from segment allocators for tests: one caller's
// run, checked to increase, and many callers' at once, checked never to
// repeat. segment's tests run it on fault stores, store's on every engine.
//
// It is imported by tests only.
package drain

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/idalloc/idalloc/segment"
)

// IDs takes n IDs of tag from a, one Next at a time, and returns them; an
// error names the call that failed or an ID that did not increase.
func IDs(a *segment.Allocator, tag string, n int) ([]int64, error) {
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

// Concurrent runs workers goroutines each taking n IDs of tag (IDs) from
// its allocator, allocs[i%len(allocs)], fails t on an error or a
// duplicate, and returns the IDs taken.
func Concurrent(t testing.TB, allocs []*segment.Allocator, tag string, workers, n int) map[int64]bool {
	t.Helper()
	results := make(chan []int64, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(a *segment.Allocator) {
			defer wg.Done()
			ids, err := IDs(a, tag, n)
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
