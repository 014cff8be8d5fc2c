package segment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/idalloc/idalloc/scramble"
)

// MaxUsableID is the highest ID the allocator hands out, and so the highest
// start a tag may have. The last 2^32 values of int64 stay unused as headroom
// for the atomic cursor, which concurrent callers push past a segment's end
// before the slow path pulls it back.
const MaxUsableID = math.MaxInt64 - 1<<32

// span is one reserved range [start, end] of the tag's sequence (the IDs
// themselves but for scrambled tags, see format.go), counted as indexes
// of the allocator's region (region.go), which in a single region are the
// numbers themselves. cursor is the next index to hand out; a single ID
// is claimed with one atomic add, a batch by compare-and-set (batch.go),
// so the range is served lock-free.
type span struct {
	cursor     atomic.Int64
	start, end int64
	prefetchAt int64 // the ID whose issue starts the background prefetch
	// top is the store's max_id after the fetch that reserved the span:
	// end's number, unless the region's numbers stop short of it. A
	// give-back compares max_id with it.
	top int64
	// after is the segment prefetched after this one while this one is
	// prefetched too (buffer.next); nil when none, and for the current.
	after *span
}

// paddedSpan holds the span of a busy tag with its cursor and its bounds
// on cache lines of their own: under contention the cursor's line moves
// between cores on every claim, and the bounds, read before it, would
// otherwise miss with it. A 128-byte object is 128-aligned (Go's size
// class 128 packs a page with them), so the cursor is the last word of
// the first line and the bounds open the second, with nothing else on
// either. A tag fetched once, most of 100,000, has a plain span: 48 bytes
// rather than 128.
type paddedSpan struct {
	_ [cacheLine - 8]byte // the first line: only the cursor, span's first word, at its end
	s span
	_ [cacheLine - (unsafe.Sizeof(span{}) - 8)]byte // the rest of the second line, after the bounds
}

const cacheLine = 64

// newSpan is a span of [start, end] with top, padded (paddedSpan) when the
// tag is busy.
func newSpan(start, end, top int64, padded bool) *span {
	var s *span
	if padded {
		s = &new(paddedSpan).s
	} else {
		s = new(span)
	}
	s.start, s.end, s.prefetchAt, s.top = start, end, start+(end-start+1)/10, top
	s.cursor.Store(start)
	return s
}

// noSpan is the span of every tag that has nothing buffered yet: every claim
// on it fails (its cursor, 1 or past, is above its end, 0) and sends the
// caller to the slow path, which pulls the cursor back (advance). One for
// all: a tag never fetched costs no span.
var noSpan = newSpan(1, 0, 0, false)

func (s *span) size() int64 { return max(0, s.end-s.start+1) }

// left is how many IDs remain unclaimed.
func (s *span) left() int64 { return max(0, s.end-max(s.cursor.Load(), s.start)+1) }

// buffer is the double buffer of one tag: cur is served lock-free; mu guards
// everything else, and is never held across I/O. It is kept small, since an
// instance may serve 100,000 tags (docs/api.md §13): what only some tags need
// (a failing fetch's state, a waiter's channel) is made when needed.
type buffer struct {
	cur atomic.Pointer[span]
	// mapped: an index claimed is not the ID itself (issue, format.go),
	// since the tag is scrambled or the allocator serves one region of
	// several: the hot path's one branch, next to cur so that it costs
	// no cache miss of its own.
	mapped bool
	// perm is a scrambled tag's permutation, nil for every other format.
	perm *scramble.Permutation
	// dated is a dated tag's per-period state, nil for every other
	// format: the hot path's other branch, taken before any claim, since
	// a dated tag's IDs come from the buffer of the current period
	// (dated_buffer.go), not from this one.
	dated *datedTag
	a     *Allocator
	tag   string
	// kind is the row's format, length and limit, fixed at create, and
	// why the row cannot be served, if it cannot.
	kind *formatKind
	// per is set on a dated tag's buffer of one period, whose fetches
	// reserve ranges of that period's counter; nil otherwise.
	per *period

	mu       sync.Mutex
	fetching bool // a fetch loop is running (at most one per tag)
	// rowStepSet counts setRowStep's calls: a fetch that began before
	// one keeps the step set rather than the one it read (update.go).
	rowStepSet uint32
	// next is the prefetched segment, nil when none; a batch that needs
	// more than it and the current one hold has more fetched after it
	// (span.after, batch.go).
	next *span
	// want is how many indexes a waiting batch lacks: the next fetch asks
	// for at least that many (batch.go); 0 when none waits.
	want int64
	// ready is closed when the fetch attempt under way ends; made for
	// the first request that waits for it, nil when none does.
	ready chan struct{}
	// trouble is the last fetch attempt's failure; nil when it succeeded
	// (or none ended yet).
	trouble   *fetchTrouble
	step      int64     // the adaptive step of the last fetch; 0 before the first
	rowStep   int64     // the row's own step: the adaptive step's floor
	lastFetch time.Time // when the last successful fetch ended
	// fetchTook is how long the last successful fetch took (snapshot.go).
	fetchTook time.Duration
	retired   int64 // IDs issued from segments no longer current
	// highWater is the end of the highest range fetched so far (the
	// store's max_id after it, a number): a range that does not start
	// above it overlaps one this instance had.
	highWater int64
	// givenBack and wasted count IDs handed back on Close and IDs reserved
	// but never to be issued (waste.go).
	givenBack, wasted int64
	// refills counts the ranges received and queued: the double buffer's
	// refills (TagStats.Refills). A dated tag's period buffers count
	// theirs on the tag's buffer (owner).
	refills int64
}

// fetchTrouble is a buffer's state while its fetches fail.
type fetchTrouble struct {
	err error     // the last attempt's
	at  time.Time // when it ended
	// poke cuts the fetch loop's backoff short when requests find nothing
	// buffered (see demandRetry).
	poke chan struct{}
}

// formatKind is what a buffer keeps of its row's format beyond the hot
// path's perm and dated: the format and length it shows, the highest
// sequence number the format has an ID for, and broken, why the row
// cannot be served (its fetches fail with it, without asking the store,
// and nothing is issued), nil when it can. Tags of one format and length
// share one (kindOf).
type formatKind struct {
	format Format
	length int
	limit  int64
	broken error
}

// sharedKinds are the formatKinds of sequential, fixed_length and
// scrambled tags that can be served, by format and length.
var sharedKinds = func() map[kindKey]*formatKind {
	m := map[kindKey]*formatKind{}
	add := func(t Tag) {
		if f, err := formatOf(t); err == nil {
			m[kindKey{f.format, f.length}] = &formatKind{format: f.format, length: f.length, limit: f.limit}
		}
	}
	add(Tag{Format: FormatSequential})
	for n := 1; n <= MaxLength; n++ {
		add(Tag{Format: FormatFixedLength, Length: n})
	}
	for n := MinScrambledLength; n <= MaxLength; n++ {
		add(Tag{Format: FormatScrambled, Length: n, FormatKey: make([]byte, scramble.KeySize)})
	}
	return m
}()

type kindKey struct {
	format Format
	length int
}

// kindOf is the formatKind of f in region reg, broken by broken (nil when
// it is not). The shared kinds are a single region's: in one of several
// the format's last number is the region's (reg.last).
func kindOf(f tagFormat, reg Region, broken error) *formatKind {
	if k := sharedKinds[kindKey{f.format, f.length}]; k != nil && broken == nil && reg.Single() {
		return k
	}
	return &formatKind{format: f.format, length: f.length, limit: reg.last(f.limit), broken: broken}
}

// demandRetry: while requests find nothing buffered and the store fails,
// the fetch loop tries again at least this often, however far its backoff
// has grown, so that service resumes within this of the store's return
// rather than after up to 5s of answering 503.
const demandRetry = 200 * time.Millisecond

// newBuffer makes the buffer of row's tag, served in row's format. A row
// whose format cannot be served makes a buffer that refuses every request
// with a fault (logged here, once), rather than serve the tag in another
// format than its users were promised.
func newBuffer(a *Allocator, row Tag) *buffer {
	// rowStep from the row, for the first fetch of a region, which
	// asks for step·Count numbers (fetchLoop).
	b := &buffer{a: a, tag: row.AppTag, rowStep: row.Step}
	b.cur.Store(noSpan)
	f, err := formatOf(row)
	b.perm = f.perm
	b.mapped = b.perm != nil || !a.region.Single()
	switch {
	case err != nil:
	case f.dated != nil && a.periods == nil:
		err = errors.New("the store keeps no per-period counters, which a dated tag's numbers are counted in")
	case f.dated != nil && !a.region.Single():
		err = errDatedRegions
	}
	var broken error
	if err != nil {
		// %v, not %w: a row is not the client's input, so no front end
		// may answer it as an invalid one.
		broken = fmt.Errorf("%w: %v", errBadRow, err)
		a.cfg.Logger.Error("tag not served: its row's number format is not one this instance can serve",
			"app_tag", row.AppTag, "format", string(row.Format), "length", row.Length, "err", broken)
	} else if f.dated != nil {
		b.dated = newDatedTag(b, f.dated)
	}
	b.kind = kindOf(f, a.region, broken)
	return b
}

// prefetch starts the background fetch of the next segment unless one is
// buffered or under way already.
func (b *buffer) prefetch() {
	b.mu.Lock()
	if b.next == nil && !b.fetching {
		b.startFetchLocked()
	}
	b.mu.Unlock()
}

// advance is the slow path, entered when segment s ran out: it switches to the
// prefetched segment, or waits a bounded time for the fetch under way. A nil
// error means the caller should claim again.
func (b *buffer) advance(ctx context.Context, s *span) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	b.mu.Lock()
	for {
		if b.a.closed.Load() {
			b.mu.Unlock()
			return ErrClosed
		}
		// A period that ended is served no more: the caller claims
		// again, in the period its clock reads now.
		if b.cur.Load() != s || b.per != nil && b.per.ended {
			b.mu.Unlock()
			return nil
		}
		// Every failed claim pushed the cursor further past the end; pull it
		// back so that failures while the store is down, however many,
		// cannot carry it round to negative IDs.
		s.cursor.Store(s.end + 1)
		if b.next != nil {
			b.popNextLocked()
			b.mu.Unlock()
			return nil
		}
		ready, err := b.fetchLocked()
		b.mu.Unlock()
		if err != nil {
			return err
		}
		if timer == nil {
			timer = time.NewTimer(b.a.cfg.WaitTimeout)
		}
		if err := b.waitFetch(ctx, ready, timer); err != nil {
			return err
		}
		b.mu.Lock()
		if b.trouble != nil && b.next == nil && b.cur.Load() == s && (b.per == nil || !b.per.ended) {
			err := b.fetchErrLocked()
			b.mu.Unlock()
			return err
		}
	}
}

// fetchLocked makes sure a fetch is under way and returns the channel closed
// when its attempt ends, or the error to answer at once: the store is failing
// and the loop backing off (answer now rather than hold the request until the
// next attempt), or a final error was seen within the last second. A fetch
// under way after a final error (a prefetch asking again whether a spent
// tag got IDs back) is not backing off: its attempt is waited for.
func (b *buffer) fetchLocked() (<-chan struct{}, error) {
	switch tr := b.trouble; {
	case b.fetching && tr != nil && !isFinal(tr.err):
		if b.a.now().Sub(tr.at) >= demandRetry {
			select {
			case tr.poke <- struct{}{}:
			default:
			}
		}
		return nil, ErrUnavailable
	case !b.fetching && tr != nil && isFinal(tr.err) && b.a.now().Sub(tr.at) < time.Second:
		return nil, tr.err
	case !b.fetching:
		b.startFetchLocked()
	}
	if b.ready == nil {
		b.ready = make(chan struct{})
	}
	return b.ready, nil
}

// wakeLocked wakes whoever waits for the fetch attempt that ended (ready).
func (b *buffer) wakeLocked() {
	if b.ready != nil {
		close(b.ready)
		b.ready = nil
	}
}

// waitFetch waits for a fetch attempt to end, bounded by timer, ctx and the
// allocator's closing.
func (b *buffer) waitFetch(ctx context.Context, ready <-chan struct{}, timer *time.Timer) error {
	select {
	case <-ready:
		return nil
	case <-timer.C:
		return ErrUnavailable
	case <-ctx.Done():
		return ErrUnavailable
	case <-b.a.closing:
		return ErrClosed
	}
}

// fetchErrLocked is the answer to a fetch attempt that ended without a
// segment: its own error when retrying cannot cure it, else ErrUnavailable.
func (b *buffer) fetchErrLocked() error {
	if b.trouble != nil && isFinal(b.trouble.err) {
		return b.trouble.err
	}
	return ErrUnavailable
}

// isFinal reports errors that retrying will not cure.
func isFinal(err error) bool {
	return errors.Is(err, ErrUnknownTag) || errors.Is(err, ErrExhausted) || errors.Is(err, errBadRow)
}
