//go:build unix

package client

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// TestTakeBlock: a claim on a span takes a block of the size asked, at
// most a sixteenth of the span and at least one ID, or what is left; a
// claim on a list takes one ID; a used-up span or a text list none.
func TestTakeBlock(t *testing.T) {
	tests := []struct {
		name      string
		batch     *batch
		pos, k    int64
		wantFirst int64
		wantN     int64
		wantOK    bool
	}{
		{"a block of the size asked", &batch{first: 1, n: 100_000, refillAt: -1}, 0, 256, 1, 256, true},
		{"a sixteenth of a short span", &batch{first: 1, n: 1000, refillAt: -1}, 0, 256, 1, 62, true},
		{"one ID of a span shorter than sixteen", &batch{first: 5, n: 10, refillAt: -1}, 3, 256, 8, 1, true},
		{"what is left of a span", &batch{first: 1, n: 100_000, refillAt: -1}, 99_900, 256, 99_901, 100, true},
		{"a used-up span", &batch{first: 1, n: 100_000, refillAt: -1}, 100_000, 256, 0, 0, false},
		{"a span claimed beyond its end", &batch{first: 1, n: 100_000, refillAt: -1}, 100_300, 256, 0, 0, false},
		{"one ID of a list", listBatch([]int64{70, 30, 90}, nil, 0), 1, 256, 30, 1, true},
		{"a used-up list", listBatch([]int64{70, 30, 90}, nil, 0), 3, 256, 0, 0, false},
		{"a text list", listBatch(nil, []string{"ORD-1", "ORD-2"}, 0), 0, 256, 0, 0, false},
	}
	c := newTestClient(t, Config{URLs: []string{"http://idalloc.test"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuffer(c, "t", c.fetchSegment, 0, false)
			tt.batch.refillAt = -1 // no fetch: the test drives the buffer
			tt.batch.pos.Store(tt.pos)
			b.cur.Store(tt.batch)
			first, n, ok := b.takeBlock(tt.k)
			if first != tt.wantFirst || n != tt.wantN || ok != tt.wantOK {
				t.Errorf("takeBlock(%d) = %d, %d, %v; want %d, %d, %v", tt.k, first, n, ok, tt.wantFirst, tt.wantN, tt.wantOK)
			}
		})
	}
}

// TestUnorderedFromLiveServer: against the real binary, goroutines that
// each take IDs of one tag from an Unordered of their own, beside
// goroutines calling Next on the same tag, get every ID once, each
// goroutine's strictly increasing (one instance), from ranges; an
// Unordered holds blocks of up to 4096 IDs and touches the buffer once
// per block.
func TestUnorderedFromLiveServer(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	srv.createTag(t, "order", 100_000)
	tr := newCounting()
	c := newTestClient(t, Config{URLs: []string{srv.URL}, HTTPClient: &http.Client{Transport: tr}})
	ctx := t.Context()

	const unordered, ordered, each = 4, 2, 200_000
	lists := make([][]int64, unordered+ordered)
	errs := make(chan error, len(lists))
	var wg sync.WaitGroup
	for w := range lists {
		wg.Go(func() {
			next := func() (int64, error) { return c.Next(ctx, "order") }
			if w < unordered {
				u := c.Unordered("order")
				next = func() (int64, error) { return u.Next(ctx) }
			}
			ids := make([]int64, 0, each)
			for range each {
				id, err := next()
				if err != nil {
					errs <- err
					return
				}
				ids = append(ids, id)
			}
			lists[w] = ids
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a call failed: %v", err)
	}
	for w, ids := range lists {
		what := "Next goroutine " + strconv.Itoa(w)
		if w < unordered {
			what = "Unordered goroutine " + strconv.Itoa(w)
		}
		checkIncreasing(t, what, ids)
	}
	n := checkUnique(t, lists...)
	if all, ranges := tr.count("/alloc"), tr.count("/alloc?as=ranges"); all != ranges {
		t.Errorf("%d of %d /alloc requests asked for a list, want none: the tag is sequential", all-ranges, all)
	}
	t.Logf("%d IDs in %d requests", n, tr.count("/alloc"))
}

// TestUnorderedOfLists: a tag of lists is served one ID at a time, as
// Next serves it (a scrambled tag's IDs unique, in the order received);
// a dated tag's text IDs are refused as Next refuses them; a tag the
// server does not know, or an invalid one, fails as in Next.
func TestUnorderedOfLists(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	for _, body := range []string{
		`{"app_tag":"secret","step":1000,"format":"scrambled","length":12}`,
		`{"app_tag":"invoice","format":"dated","period":"day","prefix":"INV","separator":"-","length":6}`,
	} {
		if status, v := srv.post(t, "/tags", body); status != http.StatusCreated {
			t.Fatalf("create tag %s: HTTP %d %v", body, status, v)
		}
	}
	c := newTestClient(t, Config{URLs: []string{srv.URL}})
	ctx := t.Context()

	u := c.Unordered("secret")
	ids := make([]int64, 0, 3000)
	for range cap(ids) {
		id, err := u.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if id < 100_000_000_000 || id > 999_999_999_999 {
			t.Fatalf("ID %d of a scrambled tag of length 12", id)
		}
		ids = append(ids, id)
	}
	checkUnique(t, ids)
	if u.next != u.end {
		t.Errorf("the Unordered of a list holds a block %d..%d, want none", u.next, u.end-1)
	}

	tests := []struct {
		tag  string
		want error
	}{
		{"invoice", ErrTextOnly},
		{"nosuchtag", ErrUnknownTag},
		{"no spaces", ErrInvalidTag},
	}
	for _, tt := range tests {
		if _, err := c.Unordered(tt.tag).Next(ctx); !errors.Is(err, tt.want) {
			t.Errorf("Unordered(%q).Next: got %v, want %v", tt.tag, err, tt.want)
		}
	}
}

// TestUnorderedAfterClose: after Close an Unordered refuses to hand out
// the IDs left in its block, as Next refuses its buffer's.
func TestUnorderedAfterClose(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), nil))
	srv.createTag(t, "order", 100_000)
	c, err := New(Config{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	u := c.Unordered("order")
	for u.next == u.end { // until it holds a block with IDs left
		if _, err := u.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if _, err := u.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close with %d IDs in the block: got %v, want ErrClosed", u.end-u.next, err)
	}
}
