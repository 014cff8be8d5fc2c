//go:build unix

package client

import (
	"net/http"
	"strconv"
	"testing"
)

// TestRangesFromLiveServer: against the real binary, more than a million
// IDs of one tag come from ranges, every one once and each goroutine's
// strictly increasing (one instance), in a few dozen requests.
func TestRangesFromLiveServer(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	srv.createTag(t, "order", 100_000)
	tr := newCounting()
	c := newTestClient(t, Config{URLs: []string{srv.URL}, HTTPClient: &http.Client{Transport: tr}})
	ctx := t.Context()

	const workers, each = 4, 300_000
	lists := collect(t, workers, each, func() (int64, error) { return c.Next(ctx, "order") })
	// NextN beside them, in the same tag.
	for range 10 {
		dst := make([]int64, 10_000)
		if err := c.NextN(ctx, "order", dst); err != nil {
			t.Fatal(err)
		}
		checkIncreasing(t, "NextN", dst)
		lists = append(lists, dst)
	}
	for w, ids := range lists[:workers] {
		checkIncreasing(t, "goroutine "+strconv.Itoa(w), ids)
	}
	n := checkUnique(t, lists...)
	all, ranges := tr.count("/alloc"), tr.count("/alloc?as=ranges")
	if all != ranges {
		t.Errorf("%d of %d /alloc requests asked for a list, want none: the tag is sequential", all-ranges, all)
	}
	// Sizes double from 16 to the cap: ~16 fetches reach it, and the
	// rest of the 1.3 M IDs take a few more.
	if all > 40 {
		t.Errorf("%d IDs took %d /alloc requests, want at most 40", n, all)
	}
	t.Logf("%d IDs in %d requests", n, all)
}

// TestScrambledTagFromLiveServer: a scrambled tag's instance refuses
// ranges, so the client asks for lists, once told: its IDs still come,
// unique, of the tag's length.
func TestScrambledTagFromLiveServer(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	status, v := srv.post(t, "/tags", `{"app_tag":"secret","step":1000,"format":"scrambled","length":12}`)
	if status != http.StatusCreated {
		t.Fatalf("create scrambled tag: HTTP %d %v", status, v)
	}
	tr := newCounting()
	c := newTestClient(t, Config{URLs: []string{srv.URL}, HTTPClient: &http.Client{Transport: tr}})
	ctx := t.Context()
	lists := collect(t, 2, 5000, func() (int64, error) { return c.Next(ctx, "secret") })
	checkUnique(t, lists...)
	for _, ids := range lists {
		for _, id := range ids {
			if id < 100_000_000_000 || id > 999_999_999_999 {
				t.Fatalf("ID %d of a scrambled tag of length 12", id)
			}
		}
	}
	if got := tr.count("/alloc?as=ranges"); got != 1 {
		t.Errorf("%d requests asked for ranges, want 1: the refusal tells the tag's format", got)
	}
	if got := tr.count("/alloc"); got < 10 {
		t.Errorf("%d /alloc requests for 10,000 IDs with MaxBatch 1000, want at least 10", got)
	}
}
