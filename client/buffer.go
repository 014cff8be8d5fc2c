package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// batch is IDs the callers of a buffer claim without a lock: one answer's
// list (ids, or strs for text IDs), or one range of an answer of ranges, a
// span (first, first+1, …, first+n-1; ids and strs nil), which costs a few
// bytes however many IDs it holds. Callers claim indexes with one atomic
// add; each index is claimed once, so each ID is handed out once.
type batch struct {
	first int64 // a span's first ID; a list's first, for the queue's order
	n     int64 // count of IDs
	ids   []int64
	// strs are the IDs of a tag whose IDs are text (a dated tag with a
	// prefix or a separator); ids is nil then, and strs nil otherwise.
	strs     []string
	refillAt int64         // claiming this index tops the buffer up; -1: none
	expires  time.Duration // Client.since reading; 0 means never
	inst     *instance     // a span's instance, for the order of spans (queue.go)
	// The fields above (88 bytes) are read by every claim and never
	// written; pos is written by every claim, so it has a cache line of
	// its own: at offset 128 of a 192-byte object, an allocator size class
	// whose objects start on line boundaries.
	_   [40]byte
	pos atomic.Int64
	_   [56]byte
}

// listBatch is a list's batch: ids or, when ids is nil, strs. Its refill
// point is where a fifth of it is left.
func listBatch(ids []int64, strs []string, expires time.Duration) *batch {
	n := int64(len(ids) + len(strs))
	bt := &batch{n: n, ids: ids, strs: strs, refillAt: n - max(n/refillLeft, 1), expires: expires}
	if len(ids) > 0 {
		bt.first = ids[0]
	}
	return bt
}

// spanBatches is a batch per span of one answer of ranges. Only one has a
// refill point: the index at which a fifth of the answer's IDs is left,
// so the next fetch starts where a list's would, however the server cut
// the answer.
func spanBatches(spans []span, inst *instance) []*batch {
	var total int64
	for _, s := range spans {
		total += s.count()
	}
	left := max(total/refillLeft, 1)
	out := make([]*batch, len(spans))
	after := total // IDs from the start of this span to the answer's end
	for i, s := range spans {
		bt := &batch{first: s.first, n: s.count(), refillAt: -1, inst: inst}
		if at := after - left; 0 <= at && at < bt.n {
			bt.refillAt = at
		}
		after -= bt.n
		out[i] = bt
	}
	return out
}

// usable reports whether b may still hand out IDs at now.
func (b *batch) usable(now time.Duration) bool {
	return b != nil && b.pos.Load() < b.n && (b.expires == 0 || now < b.expires)
}

// signal tells the callers waiting on a fetch how it ended.
type signal struct {
	done chan struct{}
	err  error // written before done is closed
}

func newSignal() *signal { return &signal{done: make(chan struct{})} }

func (s *signal) fire(err error) {
	s.err = err
	close(s.done)
}

// buffer holds the IDs of one tag (or snowflake IDs): the current batch,
// which callers take from without a lock, and a queue of batches fetched
// ahead, filled in the background when a fifth of an answer is left
// (queue.go). Fetches run on goroutines the Client owns.
type buffer struct {
	c      *Client
	tag    string
	fetch  fetchFunc
	maxAge time.Duration // snowflake IDs' age bound, for sizing; 0 for tags

	cur atomic.Pointer[batch]
	// text is set once an answer has brought text IDs: the tag's IDs are
	// text (a tag's format never changes), so Next and NextN refuse it
	// (ErrTextOnly) without claiming an index of a batch.
	text atomic.Bool

	mu sync.Mutex
	// queue is the batches fetched and not yet current, by first ID
	// (queue.go says why); queued counts their IDs.
	queue  []*batch
	queued int64
	// flights is how many fetches run, and flying how many IDs they
	// asked for.
	flights int
	flying  int64
	// lists: the tag's IDs come as lists (count=N without as=ranges): a
	// scrambled or dated tag, or a server without ranges. It is learnt
	// from the first answer and kept: a tag's format never changes.
	lists bool
	// highs holds, by instance, the last ID of the highest span of that
	// instance that has become current; nil until the first span.
	highs     []int64
	wake      *signal // fired when a running fetch ends
	size      int     // count of the next fetch
	lastFetch time.Duration
	fetched   bool // a fetch has started before
	starved   bool // a caller found the buffer empty since the last fetch started
	wasted    bool // a batch aged out unused since the last fetch started
	fast      bool // spans at the cap, fetched back to back: keep two answers ahead
}

func newBuffer(c *Client, tag string, fetch fetchFunc, maxAge time.Duration, lists bool) *buffer {
	return &buffer{c: c, tag: tag, fetch: fetch, maxAge: maxAge, lists: lists, wake: newSignal(), size: firstBatch}
}

// take claims one ID of the current batch without a lock. ok is false when
// the batch is used up or too old; the caller then goes the slow way.
func (b *buffer) take() (int64, bool) {
	bt := b.cur.Load()
	if bt == nil || bt.strs != nil {
		return 0, false
	}
	i := bt.pos.Add(1) - 1
	if i >= bt.n || (bt.expires != 0 && b.c.since() >= bt.expires) {
		return 0, false
	}
	if i == bt.refillAt {
		b.refill()
	}
	if bt.ids == nil {
		return bt.first + i, true
	}
	return bt.ids[i], true
}

// takeN claims up to len(dst) IDs of the current batch and returns how many
// it copied into dst.
func (b *buffer) takeN(dst []int64) int {
	bt := b.cur.Load()
	if bt == nil || bt.strs != nil || len(dst) == 0 {
		return 0
	}
	if bt.pos.Load() >= bt.n {
		return 0 // spares the add that would only overshoot further
	}
	i := bt.pos.Add(int64(len(dst))) - int64(len(dst))
	if i >= bt.n || (bt.expires != 0 && b.c.since() >= bt.expires) {
		return 0
	}
	k := min(bt.n-i, int64(len(dst)))
	if bt.ids == nil {
		for j := range dst[:k] {
			dst[j] = bt.first + i + int64(j)
		}
	} else {
		copy(dst, bt.ids[i:i+k])
	}
	if i <= bt.refillAt && bt.refillAt < i+k {
		b.refill()
	}
	return int(k)
}

// nextID returns one ID, waiting for a fetch when the buffer is empty.
func (b *buffer) nextID(ctx context.Context) (int64, error) {
	for {
		if id, ok := b.take(); ok {
			return id, nil
		}
		if b.text.Load() {
			return 0, ErrTextOnly
		}
		if err := b.wait(ctx); err != nil {
			return 0, err
		}
	}
}

// fill fills dst, waiting for fetches as needed.
func (b *buffer) fill(ctx context.Context, dst []int64) error {
	for len(dst) > 0 {
		if k := b.takeN(dst); k > 0 {
			dst = dst[k:]
			continue
		}
		if b.text.Load() {
			return ErrTextOnly
		}
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// wait returns when the buffer may have IDs again, or with the error of the
// fetch it waited for, or ctx's.
func (b *buffer) wait(ctx context.Context) error {
	w, err := b.await()
	if err != nil || w == nil {
		return err
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	case <-b.c.ctx.Done():
		return ErrClosed
	}
}

// sleepCtx waits d unless ctx ends first; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
