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

// preload fetches n IDs of tag, two batches at a time, and installs them as
// the tag's current batch, with no refill point: the benchmark's loop
// takes exactly n.
func preload(ctx context.Context, c *Client, tag string, n int) error {
	b, err := c.newTag(tag)
	if err != nil {
		return err
	}
	all := make([]int64, 0, n)
	for len(all) < n {
		var parts [2][]int64
		var errs [2]error
		var wg sync.WaitGroup
		for i := range parts {
			want := min(n-len(all)-i*MaxMaxBatch, MaxMaxBatch)
			if want <= 0 {
				continue
			}
			wg.Go(func() {
				var f fetched
				f, errs[i] = c.fetchSegment(ctx, tag, want)
				parts[i] = f.ids
			})
		}
		wg.Wait()
		for i := range parts {
			if errs[i] != nil {
				return errs[i]
			}
			all = append(all, parts[i]...)
		}
	}
	bt := newBatch(all, 0)
	bt.refillAt = -1
	b.cur.Store(bt)
	return nil
}
