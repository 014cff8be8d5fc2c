package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Batch sizing: a batch should last between growWithin and shrinkAfter of
// the caller's use.
const (
	// firstBatch is the count of a buffer's first fetch; it doubles while
	// fetches come back to back, so a busy caller reaches MaxBatch within a
	// few fetches and an occasional one never holds many IDs.
	firstBatch = 16
	// growWithin: a fetch started sooner than this after the previous one
	// (or while a caller waits on an empty buffer) asks for twice as many.
	growWithin = 100 * time.Millisecond
	// shrinkAfter: a fetch started later than this after the previous one
	// asks for half as many, so an idle tag holds few IDs (IDs left in a
	// buffer at exit are never issued).
	shrinkAfter = 10 * time.Second
	// refillLeft is the share of a batch left when the next is fetched.
	refillLeft = 5 // one fifth: 20 %
	// Backoff of the background fetch after every instance failed.
	minBackoff = 20 * time.Millisecond
	maxBackoff = time.Second
)

// batch is one answer's IDs. Callers claim indexes with one atomic add;
// each index is claimed once, so each ID is handed out once.
type batch struct {
	ids []int64
	// strs are the IDs of a tag whose IDs are text (a dated tag with a
	// prefix or a separator); ids is nil then, and strs nil otherwise.
	strs     []string
	refillAt int64         // claiming this index starts the next fetch
	expires  time.Duration // Client.since reading; 0 means never
	// The fields above fill a cache line (64 bytes), so pos, the only
	// field written, is on one of its own.
	pos atomic.Int64
	_   [56]byte
}

func newBatch(ids []int64, expires time.Duration) *batch {
	return newTextBatch(ids, nil, expires)
}

// newTextBatch is newBatch for ids or, when ids is nil, strs.
func newTextBatch(ids []int64, strs []string, expires time.Duration) *batch {
	n := int64(len(ids) + len(strs))
	return &batch{ids: ids, strs: strs, refillAt: n - max(n/refillLeft, 1), expires: expires}
}

// size is the count of b's IDs.
func (b *batch) size() int64 { return int64(len(b.ids) + len(b.strs)) }

// usable reports whether b may still hand out IDs at now.
func (b *batch) usable(now time.Duration) bool {
	return b != nil && b.pos.Load() < b.size() && (b.expires == 0 || now < b.expires)
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

// fetched is an answer's IDs (ids, or strs for text IDs) and the
// Client.since reading after which they may no longer be handed out (0:
// never), which the fetchFunc works out from the answer and from the
// reading just before its request was sent.
type fetched struct {
	ids     []int64
	strs    []string
	expires time.Duration
}

// fetchFunc asks an instance for n IDs.
type fetchFunc func(ctx context.Context, tag string, n int) (fetched, error)

// buffer is the double buffer of one tag (or of snowflake IDs): the current
// batch, which callers take from without a lock, and the next one, fetched
// in the background when a fifth of the current is left. At most one fetch
// runs per buffer, on a goroutine the Client owns.
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

	mu        sync.Mutex
	next      *batch
	fetching  bool
	wake      *signal // fired when the running fetch ends
	size      int     // count of the next fetch
	lastFetch time.Duration
	fetched   bool // a fetch has started before
	starved   bool // a caller found the buffer empty since the last fetch started
	wasted    bool // a batch aged out unused since the last fetch started
}

func newBuffer(c *Client, tag string, fetch fetchFunc, maxAge time.Duration) *buffer {
	return &buffer{c: c, tag: tag, fetch: fetch, maxAge: maxAge, wake: newSignal(), size: firstBatch}
}

// take claims one ID of the current batch without a lock. ok is false when
// the batch is used up or too old; the caller then goes the slow way.
func (b *buffer) take() (int64, bool) {
	bt := b.cur.Load()
	if bt == nil || bt.strs != nil {
		return 0, false
	}
	i := bt.pos.Add(1) - 1
	if i >= int64(len(bt.ids)) || (bt.expires != 0 && b.c.since() >= bt.expires) {
		return 0, false
	}
	if i == bt.refillAt {
		b.refill()
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
	n := int64(len(bt.ids))
	if bt.pos.Load() >= n {
		return 0 // spares the add that would only overshoot further
	}
	i := bt.pos.Add(int64(len(dst))) - int64(len(dst))
	if i >= n || (bt.expires != 0 && b.c.since() >= bt.expires) {
		return 0
	}
	k := copy(dst, bt.ids[i:min(n, i+int64(len(dst)))])
	if i <= bt.refillAt && bt.refillAt < i+int64(k) {
		b.refill()
	}
	return k
}

// refill starts the next fetch unless one is running or the next batch is
// already here.
func (b *buffer) refill() {
	b.mu.Lock()
	if b.next == nil {
		b.startLocked()
	}
	b.mu.Unlock()
}

// startLocked starts a fetch unless one runs. It reports false when the
// Client is closed.
func (b *buffer) startLocked() bool {
	if b.fetching {
		return true
	}
	if !b.c.goFetch(b.run) {
		return false
	}
	b.fetching = true
	return true
}

// await is the slow path: with the current batch used up it swaps in the
// next one if it is here (w is nil: take again), or makes sure a fetch runs
// and returns its signal to wait on.
func (b *buffer) await() (w *signal, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.c.since()
	cur := b.cur.Load()
	if cur.usable(now) {
		return nil, nil
	}
	if cur != nil && cur.expires != 0 && cur.pos.Load() < cur.size() {
		b.wasted = true // aged out with IDs left: ask for fewer
	}
	if b.next != nil {
		nx := b.next
		b.next = nil
		if nx.usable(now) {
			b.cur.Store(nx)
			return nil, nil
		}
		b.wasted = true
	}
	b.starved = true
	if !b.startLocked() {
		return nil, ErrClosed
	}
	return b.wake, nil
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

// nextSizeLocked adapts the batch size to the caller's pace and returns
// it; called under mu as a fetch starts.
func (b *buffer) nextSizeLocked(now time.Duration, maxBatch int) int {
	if b.fetched {
		gap := now - b.lastFetch
		switch {
		case b.wasted:
			b.size /= 2
		case b.starved || gap < b.growWithin():
			b.size *= 2
		case gap > shrinkAfter:
			b.size /= 2
		}
	}
	b.size = min(max(b.size, 1), maxBatch)
	b.fetched, b.lastFetch, b.starved, b.wasted = true, now, false, false
	return b.size
}

func (b *buffer) growWithin() time.Duration {
	if b.maxAge != 0 {
		return min(growWithin, b.maxAge/4)
	}
	return growWithin
}

// run fetches: it asks the instances for a batch until one answers, then
// installs it, as the current batch when that is used up, else as the
// next. A batch installed as the current one means callers outran the
// fetch, so the next fetch starts at once rather than at the batch's last
// fifth. Callers waiting meanwhile are woken after every pass over the
// instances, with its error if it failed; a failed pass is retried with
// backoff while the buffer needs the batch, unless the failure is final (an
// unknown tag).
func (b *buffer) run(ctx context.Context) {
	for b.fetchOne(ctx) {
	}
}

// fetchOne fetches and installs one batch; it reports whether another
// fetch should follow at once. It leaves b.fetching set when it returns
// true, and clears it otherwise.
func (b *buffer) fetchOne(ctx context.Context) bool {
	backoff := minBackoff
	b.mu.Lock()
	n := b.nextSizeLocked(b.c.since(), b.c.batchCap())
	b.mu.Unlock()
	for {
		got, err := b.fetch(ctx, b.tag, n)

		b.mu.Lock()
		w := b.wake
		b.wake = newSignal()
		switch {
		case err == nil:
			bt := newTextBatch(got.ids, got.strs, got.expires)
			if got.strs != nil {
				b.text.Store(true)
			}
			again := false
			if b.cur.Load().usable(b.c.since()) {
				b.next = bt
			} else {
				b.cur.Store(bt)
				again = bt.expires == 0 // IDs that age (snowflake, dated) would only age in the buffer
			}
			b.fetching = again
			b.mu.Unlock()
			w.fire(nil)
			return again
		case ctx.Err() != nil:
			b.fetching = false
			b.mu.Unlock()
			w.fire(ErrClosed)
			return false
		case !errors.Is(err, ErrUnavailable):
			// Final: every instance would say the same.
			b.fetching = false
			b.mu.Unlock()
			b.c.forget(b, err)
			w.fire(err)
			return false
		}
		b.mu.Unlock()
		w.fire(err)
		if !sleepCtx(ctx, backoff) {
			b.mu.Lock()
			b.fetching = false
			w := b.wake
			b.wake = newSignal()
			b.mu.Unlock()
			w.fire(ErrClosed)
			return false
		}
		backoff = min(2*backoff, maxBackoff)
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
