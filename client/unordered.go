package client

import "context"

// Block sizes of an Unordered: its first block is minBlock IDs, and each
// next one twice the last, up to maxBlock; a block is at most a
// blockShare-th of the run it is cut from, so that the goroutines share a
// short run (a tag's first fetches are short) rather than one taking it
// whole and the others waiting for the next fetch.
const (
	minBlock   = 256
	maxBlock   = 4096
	blockShare = 16
)

// Unordered hands out the IDs of one tag to one goroutine. It claims them
// from the tag's buffer a block at a time, with one atomic add, and serves
// each block from its own fields: a call between two blocks touches no
// cache line another goroutine writes, where Next's every call moves the
// tag's one shared counter between cores. Blocks grow from 256 to 4096
// IDs. The buffer behind it is the tag's, fetched and refilled as for
// Next.
//
// An Unordered is not safe for concurrent use: give each goroutine its
// own (Client.Unordered), as with a *rand.Rand. Go has no goroutine-local
// storage, and a cache per P (a sync.Pool) would keep IDs unique but not
// a goroutine's in order once the scheduler moved it to another P.
//
// Guarantees: every ID is handed out once, by Next, NextN or one
// Unordered of the Client; the IDs one Unordered hands out are strictly
// increasing while a single instance serves the Client (its blocks are
// claimed in the buffer's order); there is no order between two
// Unordereds' IDs, nor between theirs and Next's. IDs left in a block
// when the Unordered is dropped or the Client closes are never handed
// out. Only a tag served as ranges is cut into blocks; a tag of lists
// (scrambled, dated, or any of a server without ranges) is served one ID
// at a time, as Next serves it.
type Unordered struct {
	c   *Client
	tag string
	// The block: next..end-1 are this Unordered's to hand out.
	next, end int64
	size      int64 // of the next block
	// Pads to 128 bytes, a size class whose objects start on 128-byte
	// boundaries: two goroutines' Unordereds never share a cache line,
	// nor the pair of lines the adjacent-line prefetcher fetches.
	_ [80]byte
}

// Unordered returns an Unordered of tag for one goroutine. It makes no
// request and checks nothing: its first Next does.
func (c *Client) Unordered(tag string) *Unordered {
	return &Unordered{c: c, tag: tag, size: minBlock}
}

// Next returns the next ID of the Unordered's tag: from its block, or
// from a new block of the tag's buffer, waiting on the network only when
// that buffer is empty, and then no longer than ctx allows. Errors as
// Client.Next; after Close it returns ErrClosed, whatever its block
// holds.
func (u *Unordered) Next(ctx context.Context) (int64, error) {
	if id := u.next; id < u.end && !u.c.closed.Load() {
		u.next = id + 1
		return id, nil
	}
	return u.claim(ctx)
}

// claim takes a new block and returns its first ID.
func (u *Unordered) claim(ctx context.Context) (int64, error) {
	c := u.c
	if c.closed.Load() {
		return 0, ErrClosed
	}
	for {
		b := (*c.tags.Load())[u.tag]
		if b == nil {
			var err error
			if b, err = c.newTag(u.tag); err != nil {
				return 0, err
			}
		}
		if first, n, ok := b.takeBlock(u.size); ok {
			u.next, u.end = first+1, first+n
			u.size = min(2*u.size, maxBlock)
			return first, nil
		}
		if b.text.Load() {
			return 0, ErrTextOnly
		}
		if err := b.wait(ctx); err != nil {
			return 0, err
		}
	}
}

// takeBlock claims up to k IDs of the current batch, first..first+n-1,
// with one atomic add when the batch is a span; of a list it claims one
// ID (n is 1), as take does: a list's IDs are not consecutive, and a
// dated tag's age. ok is false when the batch is used up or too old.
func (b *buffer) takeBlock(k int64) (first, n int64, ok bool) {
	bt := b.cur.Load()
	if bt == nil {
		return 0, 0, false
	}
	if bt.ids != nil || bt.strs != nil || bt.expires != 0 {
		if id, ok := b.take(); ok {
			return id, 1, true
		}
		return 0, 0, false
	}
	if bt.pos.Load() >= bt.n {
		return 0, 0, false // spares the add that would only overshoot further
	}
	k = min(k, max(bt.n/blockShare, 1))
	i := bt.pos.Add(k) - k
	if i >= bt.n {
		return 0, 0, false
	}
	n = min(k, bt.n-i)
	if i <= bt.refillAt && bt.refillAt < i+n {
		b.refill()
	}
	return bt.first + i, n, true
}
