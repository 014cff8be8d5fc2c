//go:build unix

package client

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

// countingTransport counts the requests of a Client, by path, and those
// asking for ranges also as path+"?as=ranges".
type countingTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	paths map[string]int
	hosts map[string]int
}

func newCounting() *countingTransport {
	return &countingTransport{next: newTransport(2), paths: map[string]int{}, hosts: map[string]int{}}
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.paths[r.URL.Path]++
	if r.URL.Query().Get("as") == "ranges" {
		t.paths[r.URL.Path+"?as=ranges"]++
	}
	t.hosts[r.URL.Host]++
	t.mu.Unlock()
	return t.next.RoundTrip(r)
}

func (t *countingTransport) host(h string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hosts[h]
}

func (t *countingTransport) count(path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paths[path]
}

// collect runs workers goroutines that each take perWorker IDs with next,
// and returns each one's IDs in the order it got them. A failure is
// reported on t from the test goroutine.
func collect(t *testing.T, workers, perWorker int, next func() (int64, error)) [][]int64 {
	t.Helper()
	out := make([][]int64, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ids := make([]int64, 0, perWorker)
			for range perWorker {
				id, err := next()
				if err != nil {
					errs <- err
					return
				}
				ids = append(ids, id)
			}
			out[w] = ids
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a call failed: %v", err)
	}
	return out
}

// checkUnique fails t if an ID appears twice among all lists.
func checkUnique(t *testing.T, lists ...[]int64) int {
	t.Helper()
	var all []int64
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("ID %d issued twice", all[i])
		}
	}
	return len(all)
}

// checkIncreasing fails t unless ids is strictly increasing.
func checkIncreasing(t *testing.T, what string, ids []int64) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("%s: ID %d after %d: not strictly increasing", what, ids[i], ids[i-1])
		}
	}
}

func TestNextFromLiveServer(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	srv.createTag(t, "order", 1000)
	tr := newCounting()
	c := newTestClient(t, Config{URLs: []string{srv.URL}, MaxRange: 200, HTTPClient: &http.Client{Transport: tr}})
	ctx := t.Context()

	lists := collect(t, 4, 5000, func() (int64, error) { return c.Next(ctx, "order") })
	for w, ids := range lists {
		checkIncreasing(t, "goroutine "+string(rune('0'+w)), ids)
	}
	n := checkUnique(t, lists...)
	fetches := tr.count("/alloc")
	if fetches == 0 || fetches > n/50 {
		t.Errorf("%d IDs took %d /alloc requests; want ranges of up to 200 IDs (at most %d requests)", n, fetches, n/50)
	}
	b := (*c.tags.Load())["order"]
	b.mu.Lock()
	size := b.size
	b.mu.Unlock()
	if size != 200 {
		t.Errorf("fetch size after back-to-back refills: got %d, want MaxRange 200", size)
	}
}

func TestNextN(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	srv.createTag(t, "order", 1000)
	c := newTestClient(t, Config{URLs: []string{srv.URL}, MaxRange: 100})
	ctx := t.Context()

	// NextN beside Next: a dst longer than two batches waits for fetches.
	var singles []int64
	done := make(chan error, 1)
	go func() {
		for range 2000 {
			id, err := c.Next(ctx, "order")
			if err != nil {
				done <- err
				return
			}
			singles = append(singles, id)
		}
		done <- nil
	}()
	var batches [][]int64
	for range 10 {
		dst := make([]int64, 333)
		if err := c.NextN(ctx, "order", dst); err != nil {
			t.Fatal(err)
		}
		checkIncreasing(t, "NextN", dst)
		batches = append(batches, dst)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkIncreasing(t, "Next", singles)
	checkIncreasing(t, "NextN calls in turn", slices.Concat(batches...))
	checkUnique(t, append(batches, singles)...)

	if err := c.NextN(ctx, "order", nil); err != nil {
		t.Errorf("NextN with an empty dst: %v", err)
	}
}

func TestBatchSizeFollowsThePace(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	srv.createTag(t, "order", 1000)
	clock := testclock.New(time.Now())
	c := newTestClient(t, Config{URLs: []string{srv.URL}, MaxRange: 1000, Now: clock.Now})
	ctx := t.Context()
	b, err := c.newTag("order")
	if err != nil {
		t.Fatal(err)
	}
	size := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.size
	}
	// Back to back (the clock stands still): the size doubles up to the cap.
	for range 4000 {
		if _, err := c.Next(ctx, "order"); err != nil {
			t.Fatal(err)
		}
	}
	if got := size(); got != 1000 {
		t.Fatalf("size after a burst: got %d, want 1000", got)
	}
	// Idle: each fetch more than 10s after the previous halves it. The
	// caller here lets each fetch end before it goes on, so it never finds
	// the buffer empty (which would double the size again).
	fetching := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.flights > 0
	}
	quiesce := func() {
		for fetching() {
			time.Sleep(time.Millisecond)
		}
	}
	// A fetch is seen by its flag or, if it came and went between two
	// looks, by its start time (the caller would otherwise go on taking IDs
	// until the buffer ran dry, which doubles the size).
	lastStart := func() time.Duration {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.lastFetch
	}
	for range 3 {
		quiesce()
		clock.Add(11 * time.Second)
		for prev := lastStart(); !fetching() && lastStart() == prev; {
			if _, err := c.Next(ctx, "order"); err != nil {
				t.Fatal(err)
			}
		}
	}
	quiesce()
	if got := size(); got != 125 {
		t.Errorf("size after three fetches 11s apart: got %d, want 1000/8 = 125", got)
	}
}

func TestTagErrors(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	tr := newCounting()
	c := newTestClient(t, Config{URLs: []string{srv.URL}, HTTPClient: &http.Client{Transport: tr}})
	ctx := t.Context()

	for _, tag := range []string{"", "has space", strings.Repeat("x", 65), "a/b", "ü"} {
		if _, err := c.Next(ctx, tag); !errors.Is(err, ErrInvalidTag) {
			t.Errorf("Next(%q): got %v, want ErrInvalidTag", tag, err)
		}
		if err := c.NextN(ctx, tag, make([]int64, 2)); !errors.Is(err, ErrInvalidTag) {
			t.Errorf("NextN(%q): got %v, want ErrInvalidTag", tag, err)
		}
	}
	if n := tr.count("/alloc"); n != 0 {
		t.Errorf("invalid tags made %d requests, want 0", n)
	}

	_, err := c.Next(ctx, "no_such_tag")
	if !errors.Is(err, ErrUnknownTag) {
		t.Fatalf("Next(unknown): got %v, want ErrUnknownTag", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.RespCode != 2 || e.HTTPStatus != http.StatusNotFound || e.URL != srv.URL {
		t.Errorf("Next(unknown): got %#v, want an *Error with resp_code 2, HTTP 404, URL %s", e, srv.URL)
	}
	if _, ok := (*c.tags.Load())["no_such_tag"]; ok {
		t.Error("the unknown tag's buffer was kept")
	}
	// Created later, the tag is served: nothing negative was cached.
	srv.createTag(t, "no_such_tag", 10)
	if _, err := c.Next(ctx, "no_such_tag"); err != nil {
		t.Errorf("Next after creating the tag: %v", err)
	}
}
