package client

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

// Batch sizing: an answer should last between growWithin and shrinkAfter
// of the caller's use.
const (
	// firstBatch is the count of a buffer's first fetch; it doubles while
	// fetches come back to back, so a busy caller reaches the cap
	// (MaxRange for ranges, MaxBatch for lists) within a few fetches and
	// an occasional one never holds many IDs.
	firstBatch = 16
	// growWithin: a fetch started sooner than this after the previous one
	// (or while a caller waits on an empty buffer) asks for twice as many.
	growWithin = 100 * time.Millisecond
	// shrinkAfter: a fetch started later than this after the previous one
	// asks for half as many, so an idle tag holds few IDs (IDs left in a
	// buffer at exit are never issued).
	shrinkAfter = 10 * time.Second
	// refillLeft is the share of an answer left when the next is fetched.
	refillLeft = 5 // one fifth: 20 %
	// spanFlights is how many fetches of ranges may run at once for one
	// tag; lists are fetched one at a time.
	spanFlights = 2
	// Backoff of a background fetch after every instance failed.
	minBackoff = 20 * time.Millisecond
	maxBackoff = time.Second
)

// How far ahead a buffer fetches, and in what order it serves.
//
// A fetch starts when a fifth of an answer is left, and that fifth must
// outlast the round trip. A caller that takes a whole answer at the cap
// within growWithin (10 M IDs/s with ranges of 1,000,000) may not leave it
// that long, above all when its goroutines keep every core busy and the
// fetch and the instance wait for one; so such a buffer is fast: it keeps
// two answers ahead (one queued, one on its way) and, when it falls
// behind, runs two fetches at once. Ranges cost a few bytes however many
// IDs they hold, so this costs no memory; its price is the IDs left at
// exit, a caller's fifth of a second or so. Lists keep one fetch at a
// time and one answer ahead, as they always did: their memory is per ID,
// and scrambled and dated IDs have no order for the queue to keep.
//
// One instance hands out a tag's IDs in the order of its claims: each
// claim takes IDs above every earlier one's. Two fetches in flight to one
// instance are claimed in an order the client cannot see, their answers
// may arrive in the other order, and an answer the instance claimed in
// parts (a count beyond its buffered segments) may interleave with the
// other's parts. So answers are not served as they arrive: they are cut
// into their spans, queued by first ID, and the lowest is served first.
// Two spans of one instance are disjoint and the lower was claimed first,
// so spans queued together come out in the instance's own order. What a
// queue cannot reorder is a span that arrives after a higher span of its
// instance has become current (its fetch was slow and the buffer ran
// through the other meanwhile): serving it would go back, so it is
// dropped, never issued by anyone, as IDs left in a buffer at exit are.
// highs keeps, per instance, what that check needs. Spans of different
// instances are ordered by first ID too, but nothing is promised across
// instances.

// fetched is an answer's IDs (spans, ids, or strs for text IDs), the
// instance that answered, and the Client.since reading after which they
// may no longer be handed out (0: never), which the fetchFunc works out
// from the answer and from the reading just before its request was sent.
type fetched struct {
	spans   []span
	ids     []int64
	strs    []string
	inst    *instance
	expires time.Duration
	// lists: the tag's IDs come as lists from now on (the answer was a
	// list, or the instance refused ranges for this tag).
	lists bool
}

// fetchFunc asks an instance for n IDs: as a list when lists is set,
// else as ranges if the instance gives them.
type fetchFunc func(ctx context.Context, tag string, n int, lists bool) (fetched, error)

// refill tops the buffer up; a claim calls it at an answer's refill point.
func (b *buffer) refill() {
	b.mu.Lock()
	b.topUpLocked()
	b.mu.Unlock()
}

// topUpLocked starts fetches while the IDs queued and on their way fall
// short of what the buffer keeps ahead of its current batch: one answer,
// two when fast. It reports false when the Client is closed.
func (b *buffer) topUpLocked() bool {
	limit := spanFlights
	if b.lists {
		limit = 1
	}
	for b.flights < limit && b.queued+b.flying < b.aheadLocked() {
		if !b.startLocked() {
			return false
		}
	}
	return true
}

func (b *buffer) aheadLocked() int64 {
	if b.fast {
		return 2 * int64(b.size)
	}
	return int64(b.size)
}

// startLocked starts one fetch, in the tag's format as now known; false
// when the Client is closed.
func (b *buffer) startLocked() bool {
	limit := b.c.rangeCap()
	if b.lists {
		limit = b.c.batchCap()
	}
	n, lists := b.nextSizeLocked(b.c.since(), limit), b.lists
	if !b.c.goFetch(func(ctx context.Context) { b.run(ctx, n, lists) }) {
		return false
	}
	b.flights++
	b.flying += int64(n)
	return true
}

// await is the slow path: with the current batch used up it makes the
// next queued one current if there is one (w is nil: take again), or
// makes sure a fetch runs and returns its signal to wait on.
func (b *buffer) await() (w *signal, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.c.since()
	cur := b.cur.Load()
	if cur.usable(now) {
		return nil, nil
	}
	if cur != nil && cur.expires != 0 && cur.pos.Load() < cur.n {
		b.wasted = true // aged out with IDs left: ask for fewer
	}
	if b.promoteLocked(now) {
		return nil, nil
	}
	b.starved = true
	if !b.topUpLocked() {
		return nil, ErrClosed
	}
	return b.wake, nil
}

// promoteLocked makes the first usable queued batch current, dropping
// those that aged out; it reports whether there was one.
func (b *buffer) promoteLocked(now time.Duration) bool {
	for len(b.queue) > 0 {
		bt := b.queue[0]
		b.queue = slices.Delete(b.queue, 0, 1)
		b.queued -= bt.n
		if !bt.usable(now) {
			b.wasted = true
			continue
		}
		if bt.inst != nil {
			b.highs[bt.inst.idx] = max(b.highs[bt.inst.idx], bt.first+bt.n-1)
		}
		b.cur.Store(bt)
		return true
	}
	return false
}

// enqueueLocked queues bt by first ID, unless it is a span below one of
// its instance's that has become current (see above).
func (b *buffer) enqueueLocked(bt *batch) {
	if bt.inst != nil {
		if b.highs == nil {
			b.highs = make([]int64, len(b.c.insts))
			for i := range b.highs {
				b.highs[i] = -1
			}
		}
		if bt.first <= b.highs[bt.inst.idx] {
			return
		}
	}
	i, _ := slices.BinarySearchFunc(b.queue, bt.first, func(q *batch, first int64) int { return cmp.Compare(q.first, first) })
	b.queue = slices.Insert(b.queue, i, bt)
	b.queued += bt.n
}

// installLocked queues an answer and makes its first batch current when
// the callers have used up theirs. It then tops the buffer up, unless its
// IDs age (snowflake, dated), which would only age in the buffer: a fetch
// that came back to an empty buffer was outrun, so the next starts at
// once rather than at the answer's last fifth.
func (b *buffer) installLocked(got fetched) {
	if got.lists && !b.lists {
		b.lists, b.fast = true, false
	}
	if got.strs != nil {
		b.text.Store(true)
	}
	if got.spans != nil {
		for _, bt := range spanBatches(got.spans, got.inst) {
			b.enqueueLocked(bt)
		}
	} else {
		b.enqueueLocked(listBatch(got.ids, got.strs, got.expires))
	}
	if now := b.c.since(); !b.cur.Load().usable(now) {
		b.promoteLocked(now)
	}
	if got.expires == 0 {
		b.topUpLocked()
	}
}

// landLocked accounts for the end of a fetch of n IDs.
func (b *buffer) landLocked(n int) {
	b.flights--
	b.flying -= int64(n)
}

// run makes one fetch of n IDs: it asks the instances until one answers,
// then installs the answer. Callers waiting meanwhile are woken after
// every pass over the instances, with its error if it failed; a failed
// pass is retried with backoff, unless the failure is final (an unknown
// tag) or the Client closes.
func (b *buffer) run(ctx context.Context, n int, lists bool) {
	backoff := minBackoff
	for {
		got, err := b.fetch(ctx, b.tag, n, lists)

		b.mu.Lock()
		w := b.wake
		b.wake = newSignal()
		final := err == nil || ctx.Err() != nil || !errors.Is(err, ErrUnavailable)
		if final {
			b.landLocked(n)
		}
		switch {
		case err == nil:
			b.installLocked(got)
		case ctx.Err() != nil:
			err = ErrClosed
		}
		b.mu.Unlock()
		if final && err != nil && err != ErrClosed {
			b.c.forget(b, err) // every instance would say the same
		}
		w.fire(err)
		if final {
			return
		}
		if !sleepCtx(ctx, backoff) {
			b.mu.Lock()
			b.landLocked(n)
			w := b.wake
			b.wake = newSignal()
			b.mu.Unlock()
			w.fire(ErrClosed)
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// nextSizeLocked adapts the fetch size to the caller's pace and returns
// it; called under mu as a fetch starts.
func (b *buffer) nextSizeLocked(now time.Duration, limit int) int {
	quick := false
	if b.fetched {
		gap := now - b.lastFetch
		quick = b.starved || gap < b.growWithin()
		switch {
		case b.wasted:
			b.size /= 2
		case quick:
			b.size *= 2
		case gap > shrinkAfter:
			b.size /= 2
		}
	}
	b.size = min(max(b.size, 1), limit)
	b.fast = !b.lists && quick && !b.wasted && b.size == limit
	b.fetched, b.lastFetch, b.starved, b.wasted = true, now, false, false
	return b.size
}

func (b *buffer) growWithin() time.Duration {
	if b.maxAge != 0 {
		return min(growWithin, b.maxAge/4)
	}
	return growWithin
}
