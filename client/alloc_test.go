package client

import (
	"context"
	"sync"
	"testing"
)

// TestHotPathAllocatesNothing: Next and NextN from a buffer that holds IDs
// allocate nothing.
func TestHotPathAllocatesNothing(t *testing.T) {
	f := newFake(t, 1)
	c := newTestClient(t, Config{URLs: []string{f.URL}})
	ctx := context.Background()
	if err := preload(ctx, c, "t", 50_000); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10_000, func() {
		if _, err := c.Next(ctx, "t"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Next: %v allocations per call, want 0", n)
	}
	dst := make([]int64, 3)
	if n := testing.AllocsPerRun(1000, func() {
		if err := c.NextN(ctx, "t", dst); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("NextN: %v allocations per call, want 0", n)
	}
}

// preload fetches n IDs of tag and installs them in the tag's buffer
// with no refill point, so that the benchmark's loop takes exactly n. An
// instance with ranges gives them in fetches of up to MaxRange, queued
// as spans as a fast caller's are; one without, in lists of up to
// MaxBatch, two fetches at a time, installed as one batch.
func preload(ctx context.Context, c *Client, tag string, n int) error {
	b, err := c.newTag(tag)
	if err != nil {
		return err
	}
	var spans []*batch
	var all []int64
	lists := false
	for got := 0; got < n; {
		var parts [2]fetched
		var errs [2]error
		var wg sync.WaitGroup
		for i := range parts {
			want := min(n-got, c.rangeCap())
			if lists {
				want = min(n-got-i*c.batchCap(), c.batchCap())
			}
			if want <= 0 || (i > 0 && !lists) {
				continue
			}
			wg.Go(func() { parts[i], errs[i] = c.fetchSegment(ctx, tag, want, lists) })
		}
		wg.Wait()
		for i, p := range parts {
			if errs[i] != nil {
				return errs[i]
			}
			for _, bt := range spanBatches(p.spans, p.inst) {
				bt.refillAt = -1
				spans = append(spans, bt)
				got += int(bt.n)
			}
			all = append(all, p.ids...)
			got += len(p.ids)
			lists = lists || p.lists
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if all != nil {
		bt := listBatch(all, nil, 0)
		bt.refillAt = -1
		b.enqueueLocked(bt)
	}
	for _, bt := range spans {
		b.enqueueLocked(bt)
	}
	b.promoteLocked(c.since())
	return nil
}
