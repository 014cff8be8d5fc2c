package client

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
)

// TestSpansServedInOrder: spans are served by first ID whatever order
// their answers arrived in; a span of an instance below one of its own
// that has become current is dropped, and another instance's is not.
func TestSpansServedInOrder(t *testing.T) {
	c := newTestClient(t, Config{URLs: []string{"http://a.test", "http://b.test"}})
	b, err := c.newTag("t")
	if err != nil {
		t.Fatal(err)
	}
	a, other := c.insts[0], c.insts[1]
	enqueue := func(inst *instance, spans ...span) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, bt := range spanBatches(spans, inst) {
			bt.refillAt = -1 // no fetch: the test drives the queue
			b.enqueueLocked(bt)
		}
	}
	drain := func() []int64 {
		var ids []int64
		for {
			if id, ok := b.take(); ok {
				ids = append(ids, id)
				continue
			}
			b.mu.Lock()
			more := b.promoteLocked(c.since())
			b.mu.Unlock()
			if !more {
				return ids
			}
		}
	}
	queued := func() []span {
		b.mu.Lock()
		defer b.mu.Unlock()
		var out []span
		for _, bt := range b.queue {
			out = append(out, span{bt.first, bt.first + bt.n - 1})
		}
		return out
	}

	// Claimed A, then B; B's answer came first, and A's was cut in two
	// parts around it (the instance claimed it in parts).
	enqueue(a, span{20, 29})
	enqueue(a, span{10, 14}, span{30, 34})
	want := slices.Concat(seq(10, 14), seq(20, 29), seq(30, 34))
	if got := drain(); !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	// 30..34 has been current: a later answer of a below it comes too
	// late (its order cannot be kept) and is dropped; b's is served.
	enqueue(a, span{15, 19})
	enqueue(other, span{1, 3})
	enqueue(a, span{40, 41})
	if got, want := queued(), []span{{1, 3}, {40, 41}}; !slices.Equal(got, want) {
		t.Errorf("queue %v, want %v: a's late span dropped, b's kept", got, want)
	}
	if got, want := drain(), slices.Concat(seq(1, 3), seq(40, 41)); !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

func seq(first, last int64) []int64 {
	var out []int64
	for id := first; id <= last; id++ {
		out = append(out, id)
	}
	return out
}

// TestClaimsAcrossRanges: answers cut into several ranges are served
// whole, by Next and NextN across their boundaries, and no number
// between two ranges is ever handed out.
func TestClaimsAcrossRanges(t *testing.T) {
	f := newFake(t, 1)
	f.cut = 7
	c := newTestClient(t, Config{URLs: []string{f.URL}, MaxRange: 50})
	ctx := t.Context()
	var got []int64
	for i := range 400 {
		if i%3 == 0 {
			dst := make([]int64, 23) // spans several ranges
			if err := c.NextN(ctx, "t", dst); err != nil {
				t.Fatal(err)
			}
			got = append(got, dst...)
			continue
		}
		id, err := c.Next(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	checkIncreasing(t, "one goroutine", got)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range got {
		if f.gaps[id] {
			t.Fatalf("ID %d lies between two ranges of an answer: it was never issued", id)
		}
	}
	if len(f.gaps) == 0 {
		t.Fatal("the fake cut no answer: the test tests nothing")
	}
}

// TestRangesUniqueUnderRace: many goroutines on one tag, by Next and
// NextN, with answers of several ranges and two fetches at a time: every
// ID once, and each goroutine's strictly increasing (one instance).
func TestRangesUniqueUnderRace(t *testing.T) {
	f := newFake(t, 1)
	f.cut = 900
	c := newTestClient(t, Config{URLs: []string{f.URL}, MaxRange: 5000})
	ctx := t.Context()
	var mode atomic.Int64
	lists := collect(t, 16, 20_000, func() (int64, error) {
		// A quarter of the calls are NextN of 1, the rest Next.
		if mode.Add(1)%4 == 0 {
			var one [1]int64
			err := c.NextN(ctx, "t", one[:])
			return one[0], err
		}
		return c.Next(ctx, "t")
	})
	for w, ids := range lists {
		checkIncreasing(t, "goroutine "+strconv.Itoa(w), ids)
	}
	checkUnique(t, lists...)
}

// TestFallbackToLists: a tag whose instance refuses ranges (resp_code 1
// naming as: a scrambled or dated tag) is asked again for a list at once,
// and for lists from then on; so is a tag whose instance answers a list
// (a server from before ranges, which ignores as=ranges).
func TestFallbackToLists(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse bool // answer as=ranges with resp_code 1 naming as
		old    bool // ignore as=ranges
	}{
		{"scrambled or dated tag", true, false},
		{"server without ranges", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, 1)
			f.lists = tc.old
			var asked, refused, listed atomic.Int64
			f.fault = func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Query().Get("as") != "ranges" {
					listed.Add(1)
					return false
				}
				asked.Add(1)
				if !tc.refuse {
					return false
				}
				refused.Add(1)
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"resp_code":1,"msg":"invalid as: this tag's IDs are not runs of consecutive numbers","kind":"bad_request","field":"as"}`)
				return true
			}
			c := newTestClient(t, Config{URLs: []string{f.URL}, MaxBatch: 100})
			ids := take(t, c, 3000)
			checkIncreasing(t, "one goroutine", ids)
			if got := asked.Load(); got != 1 {
				t.Errorf("as=ranges asked %d times, want once: the first answer tells the tag's format", got)
			}
			if got := listed.Load(); got < 30 {
				t.Errorf("%d list requests for 3000 IDs with MaxBatch 100, want at least 30", got)
			}
			if tc.refuse {
				// The refused fetch was asked again as a list at once: no
				// caller saw the refusal (take fails on an error).
				if got := refused.Load(); got != 1 {
					t.Errorf("refused %d times, want 1", got)
				}
			}
			b := (*c.tags.Load())["t"]
			b.mu.Lock()
			lists := b.lists
			b.mu.Unlock()
			if !lists {
				t.Error("the tag is not remembered as one of lists")
			}
		})
	}
}

// TestWrongCountIsRefused: an answer of ranges that does not hold the
// count asked for is an error, never IDs.
func TestWrongCountIsRefused(t *testing.T) {
	f := newFake(t, 1)
	f.fault = func(w http.ResponseWriter, r *http.Request) bool {
		fmt.Fprint(w, `{"resp_code":0,"msg":"success","ranges":[[1,3]]}`)
		return true
	}
	c := newTestClient(t, Config{URLs: []string{f.URL}})
	if id, err := c.Next(t.Context(), "t"); err == nil {
		t.Fatalf("got ID %d from an answer of 3 IDs to count=16, want an error", id)
	}
}
