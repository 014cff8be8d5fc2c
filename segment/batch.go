package segment

import (
	"context"
	"errors"
	"time"
)

// A batch (NextN) is claimed whole or not at all whenever the current
// segment, or it and the prefetched one together, hold it: a batch that
// fails (the store down, the wait cut short) then leaves no gap in the tag's
// sequence. Claimed IDs cannot be handed back later, since other requests
// may have been given higher ones meanwhile and the instance's IDs must keep
// increasing.

// claimBatch fills a prefix of dst with claimed IDs and returns its length:
// claimRuns, written out.
func (b *buffer) claimBatch(ctx context.Context, dst []int64) (int, error) {
	c, err := b.claimRuns(ctx, int64(len(dst)))
	return c.fill(dst), err
}

// runs is what one claim took: at most two runs of consecutive numbers,
// the rest of the current segment and the head of the prefetched one.
type runs struct {
	r [2]Range
	n int
}

// add appends the k numbers from first, if any.
func (c *runs) add(first, k int64) {
	if k > 0 {
		c.r[c.n] = Range{First: first, Last: first + k - 1}
		c.n++
	}
}

// count is how many numbers c holds.
func (c *runs) count() int64 {
	var n int64
	for _, r := range c.r[:c.n] {
		n += r.Len()
	}
	return n
}

// fill writes c's numbers into dst, in order, and returns how many.
func (c *runs) fill(dst []int64) int {
	filled := 0
	for _, r := range c.r[:c.n] {
		k := int(r.Len())
		fillIDs(dst[filled:filled+k], r.First)
		filled += k
	}
	return filled
}

// claimRuns claims n numbers, or a prefix of them: all n from the current
// segment lock-free or from it and the prefetched segment under mu, or it
// waits for the prefetched segment and tries again. Only a batch larger
// than both segments together is claimed in parts, so only such a batch
// can lose numbers when a later part fails.
func (b *buffer) claimRuns(ctx context.Context, n int64) (runs, error) {
	for {
		s := b.cur.Load()
		if v := s.cursor.Load(); v <= s.end-n+1 {
			if !s.cursor.CompareAndSwap(v, v+n) {
				continue
			}
			if v <= s.prefetchAt && s.prefetchAt < v+n {
				b.prefetch()
			}
			var c runs
			c.add(v, n)
			return c, nil
		}
		c, retry, err := b.claimAcross(n)
		switch {
		case err != nil || c.n > 0:
			return c, err
		case retry:
			continue
		}
		if err := b.awaitNext(ctx); err != nil {
			return runs{}, err
		}
	}
}

// claimAcross claims n numbers from the rest of the current segment and
// the prefetched one, which becomes current; a batch larger than both
// takes all of both. retry: the current segment alone holds the batch now.
// Nothing claimed and no retry: nothing is prefetched yet.
func (b *buffer) claimAcross(n int64) (c runs, retry bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.a.closed.Load() {
		return runs{}, false, ErrClosed
	}
	if b.per != nil && b.per.ended {
		return runs{}, false, errPeriodOver
	}
	s := b.cur.Load()
	for {
		v := s.cursor.Load()
		left := max(0, s.end-v+1)
		if left >= n {
			return runs{}, true, nil
		}
		nx := b.next
		if nx == nil {
			return runs{}, false, nil
		}
		if left > 0 && !s.cursor.CompareAndSwap(v, s.end+1) {
			continue // a single claim moved the cursor: count again
		}
		take := min(n-left, nx.size())
		c.add(v, left)
		c.add(nx.start, take)
		nx.cursor.Store(nx.start + take)
		b.retired += s.size()
		b.cur.Store(nx)
		b.next = nil
		// No claim will land on the prefetch point this batch passed.
		if nx.start+take > nx.prefetchAt && !b.fetching {
			b.startFetchLocked()
		}
		return c, false, nil
	}
}

// awaitNext waits, bounded as advance is, until a segment is prefetched,
// starting the fetch if none is under way. Unlike advance it never retires
// the current segment, whose rest the batch counts on.
func (b *buffer) awaitNext(ctx context.Context) error {
	timer := time.NewTimer(b.a.cfg.WaitTimeout)
	defer timer.Stop()
	b.mu.Lock()
	for b.next == nil {
		if b.a.closed.Load() {
			b.mu.Unlock()
			return ErrClosed
		}
		if b.per != nil && b.per.ended {
			b.mu.Unlock()
			return errPeriodOver
		}
		ready, err := b.fetchLocked()
		b.mu.Unlock()
		if err != nil {
			return err
		}
		if err := b.waitFetch(ctx, ready, timer); err != nil {
			return err
		}
		b.mu.Lock()
		if b.trouble != nil && b.next == nil && (b.per == nil || !b.per.ended) {
			err := b.fetchErrLocked()
			b.mu.Unlock()
			return err
		}
	}
	b.mu.Unlock()
	return nil
}

// errPeriodOver: a batch claimed of a dated tag's period that ended
// meanwhile; the caller claims it again in the period the clock reads.
var errPeriodOver = errors.New("the period ended while the batch was claimed")

// fillIDs writes first, first+1, ... into dst.
func fillIDs(dst []int64, first int64) {
	for i := range dst {
		dst[i] = first + int64(i)
	}
}
