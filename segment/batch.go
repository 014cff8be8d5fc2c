package segment

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment/dated"
)

// A batch (NextN, NextRanges) is claimed whole or not at all: from the
// current segment alone, or from its rest and the prefetched segments once
// they hold it all, a fetch having asked the store for what they lacked
// before anything was claimed. So a batch that fails (the store down, the
// wait cut short) leaves no gap in the tag's sequence, and one larger than
// what a bounded tag has left is refused with nothing taken (docs/api.md
// §15): the IDs it would have needed stay buffered for single IDs and
// smaller batches. Claimed IDs are never handed back to the buffer, since
// other requests may have been given higher ones meanwhile and the
// instance's IDs must keep increasing.

// fillBatch fills dst with claimed indexes, in order. It notes the first
// runs and writes them once claimed, out of the lock a claim across
// segments holds; a batch of more runs (other instances' fetches between
// the segments it took) has the rest written as they come.
func (b *buffer) fillBatch(ctx context.Context, dst []int64) error {
	var noted [2]Range
	n, at := 0, 0
	err := b.claimRuns(ctx, int64(len(dst)), func(first, k int64) {
		if n < len(noted) {
			noted[n] = Range{First: first, Last: first + k - 1}
			n++
		} else {
			fillIDs(dst[at:at+int(k)], first)
		}
		at += int(k)
	})
	if err != nil {
		return err
	}
	at = 0
	for _, r := range noted[:n] {
		fillIDs(dst[at:at+int(r.Len())], r.First)
		at += int(r.Len())
	}
	return nil
}

// claimRuns claims n indexes whole and passes them to emit in order, as
// runs of consecutive ones (k ≥ 1 each): from the current segment
// lock-free, or under mu from its rest and the prefetched segments once
// they hold n, waiting (bounded by WaitTimeout) for a fetch of what they
// lack. On error nothing is claimed and emit was not called. Errors:
// ErrClosed, errPeriodOver, ErrUnavailable, the fetch's final errors, and
// for a batch larger than what this instance can get of the tag a
// *TooLargeError (ErrExhausted when it has none left).
func (b *buffer) claimRuns(ctx context.Context, n int64, emit func(first, k int64)) error {
	if n <= 0 {
		return nil
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s := b.cur.Load()
		if v := s.cursor.Load(); v <= s.end-n+1 {
			if !s.cursor.CompareAndSwap(v, v+n) {
				continue
			}
			if v <= s.prefetchAt && s.prefetchAt < v+n {
				b.prefetch()
			}
			emit(v, n)
			return nil
		}
		done, ready, err := b.claimAcross(n, emit)
		switch {
		case err != nil || done:
			return err
		case ready == nil:
			continue // the current segment alone holds the batch now
		}
		if timer == nil {
			timer = time.NewTimer(b.a.cfg.WaitTimeout)
		}
		if err := b.waitFetch(ctx, ready, timer); err != nil {
			return err
		}
	}
}

// claimAcross claims n indexes from the rest of the current segment and
// the prefetched ones, in order, when they hold n (done): each one used up
// is retired, and the one the batch ends in becomes current. Otherwise it
// claims nothing and returns the channel closed when the fetch of what
// they lack ends (fetchMoreLocked), or neither when the current segment
// alone holds the batch now.
func (b *buffer) claimAcross(n int64, emit func(first, k int64)) (done bool, ready <-chan struct{}, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.a.closed.Load() {
		return false, nil, ErrClosed
	}
	if b.per != nil && b.per.ended {
		return false, nil, errPeriodOver
	}
	s := b.cur.Load()
	for {
		v := s.cursor.Load()
		left := max(0, s.end-v+1)
		if left >= n {
			return false, nil, nil
		}
		if have := left + b.queuedLocked(); have < n {
			ready, err := b.fetchMoreLocked(n-have, have)
			return false, ready, err
		}
		if left > 0 {
			if !s.cursor.CompareAndSwap(v, s.end+1) {
				continue // a single claim moved the cursor: count again
			}
			emit(v, left)
		}
		for need := n - left; need > 0; {
			nx := b.next
			take := min(need, nx.size())
			// Before it is current, so that no claim lands below.
			nx.cursor.Store(nx.start + take)
			b.popNextLocked()
			if take > 0 {
				emit(nx.start, take)
			}
			need -= take
		}
		// No claim will land on the prefetch point this batch passed.
		if c := b.cur.Load(); c.cursor.Load() > c.prefetchAt && b.next == nil && !b.fetching {
			b.startFetchLocked()
		}
		return true, nil, nil
	}
}

// fetchMoreLocked is claimAcross's answer to a batch short more indexes
// than the have buffered: its refusal when this instance can get no more
// of the tag (its last fetch reached the format's last number, or found
// the tag spent), else the channel closed when a fetch of at least short
// (want) ends.
func (b *buffer) fetchMoreLocked(short, have int64) (<-chan struct{}, error) {
	if b.highWater >= b.kind.limit && b.kind.broken == nil {
		return nil, b.tooLargeLocked(have)
	}
	b.want = max(b.want, short)
	ready, err := b.fetchLocked()
	if errors.Is(err, ErrExhausted) {
		return nil, b.tooLargeLocked(have)
	}
	return ready, err
}

// ErrBatchTooLarge: a batch (count) larger than what its tag has left on
// this instance: the last IDs of a bounded format (fixed_length,
// scrambled; sequential's end at MaxUsableID), or of a dated tag's
// period. Nothing is claimed, and the tag goes on serving what it has to
// single IDs and smaller batches (docs/api.md §15). A refusal is a
// *TooLargeError, a case of it whose words say how many are left.
var ErrBatchTooLarge = invalid("count", "more than this tag has left on this instance", nil)

// TooLargeError is ErrBatchTooLarge for one batch, with Left, the IDs the
// tag has left on this instance (at least 1): a front end may send it
// apart from the words, so that a client asks for that many. errors.Is(err,
// ErrBatchTooLarge) matches it, and errs.Describe finds its words.
type TooLargeError struct {
	Left int64
	e    *errs.Error
}

// Error is its words, as errs.Describe finds them.
func (e *TooLargeError) Error() string { return e.e.Error() }

// Unwrap returns its *errs.Error, a case of ErrBatchTooLarge.
func (e *TooLargeError) Unwrap() error { return e.e }

// tooLargeLocked refuses a batch larger than the have indexes this
// instance holds of the tag and can hold: a *TooLargeError, or
// ErrExhausted when it holds none. A dated tag's words say when its next
// period begins.
func (b *buffer) tooLargeLocked(have int64) error {
	if have == 0 {
		return ErrExhausted
	}
	reason := "must be at most " + strconv.FormatInt(have, 10) + ": the IDs this tag has left on this instance, " +
		"which single IDs and smaller batches still get"
	if b.per != nil {
		// Its seconds rounded as a spent period's Retry-After is.
		next := dated.ExhaustedError{RetryAfter: max(0, b.per.key.End.Sub(b.a.now()))}
		reason = "must be at most " + strconv.FormatInt(have, 10) + ": the IDs this tag's current period has left " +
			"on this instance, which single IDs and smaller batches still get (the next period begins in " +
			strconv.FormatInt(next.RetryAfterSeconds(), 10) + "s)"
	}
	return &TooLargeError{Left: have, e: errs.E(errs.BadRequest, "count", reason, ErrBatchTooLarge)}
}

// queuedLocked is how many indexes the prefetched segments hold.
func (b *buffer) queuedLocked() int64 {
	var n int64
	for s := b.next; s != nil; s = s.after {
		n += s.size()
	}
	return n
}

// popNextLocked retires the current segment and makes the first
// prefetched one current.
func (b *buffer) popNextLocked() {
	nx := b.next
	b.retired += b.cur.Load().size()
	b.next, nx.after = nx.after, nil
	b.cur.Store(nx)
}

// queueLocked appends a fetched segment to the prefetched ones. One that
// continues the last of them, no other fetch of the row having come
// between, extends it: a batch's shortfall fetched behind a prefetched
// segment is one segment with it, as give-back wants.
func (b *buffer) queueLocked(s *span) {
	at := &b.next
	for *at != nil && (*at).after != nil {
		at = &(*at).after
	}
	if t := *at; t != nil && t.end+1 == s.start {
		// t is unclaimed: only the current segment is claimed from.
		*at = newSpan(t.start, s.end, s.top, b.step != 0)
		return
	}
	if *at == nil {
		*at = s
		return
	}
	(*at).after = s
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
