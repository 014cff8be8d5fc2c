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

// claimBatch fills a prefix of dst with claimed IDs and returns its length.
// It fills all of dst, from the current segment lock-free or from it and the
// prefetched segment under mu, or waits for the prefetched segment and tries
// again. Only a batch larger than both segments together is filled in parts,
// so only such a batch can lose IDs when a later part fails.
func (b *buffer) claimBatch(ctx context.Context, dst []int64) (int, error) {
	n := int64(len(dst))
	for {
		s := b.cur.Load()
		if v := s.cursor.Load(); v <= s.end-n+1 {
			if !s.cursor.CompareAndSwap(v, v+n) {
				continue
			}
			if v <= s.prefetchAt && s.prefetchAt < v+n {
				b.prefetch()
			}
			fillIDs(dst, v)
			return len(dst), nil
		}
		filled, retry, err := b.claimAcross(dst)
		switch {
		case err != nil || filled > 0:
			return filled, err
		case retry:
			continue
		}
		if err := b.awaitNext(ctx); err != nil {
			return 0, err
		}
	}
}

// claimAcross claims dst from the rest of the current segment and the
// prefetched one, which becomes current; a batch larger than both takes all
// of both. retry: the current segment alone holds the batch now. Neither
// filled nor retry: nothing is prefetched yet.
func (b *buffer) claimAcross(dst []int64) (filled int, retry bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.a.closed.Load() {
		return 0, false, ErrClosed
	}
	if b.per != nil && b.per.ended {
		return 0, false, errPeriodOver
	}
	n := int64(len(dst))
	s := b.cur.Load()
	for {
		v := s.cursor.Load()
		left := max(0, s.end-v+1)
		if left >= n {
			return 0, true, nil
		}
		nx := b.next
		if nx == nil {
			return 0, false, nil
		}
		if left > 0 && !s.cursor.CompareAndSwap(v, s.end+1) {
			continue // a single claim moved the cursor: count again
		}
		take := min(n-left, nx.size())
		fillIDs(dst[:left], v)
		fillIDs(dst[left:left+take], nx.start)
		nx.cursor.Store(nx.start + take)
		b.retired += s.size()
		b.cur.Store(nx)
		b.next = nil
		// No claim will land on the prefetch point this batch passed.
		if nx.start+take > nx.prefetchAt && !b.fetching {
			b.startFetchLocked()
		}
		return int(left + take), false, nil
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
		if b.failing && b.next == nil && (b.per == nil || !b.per.ended) {
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
