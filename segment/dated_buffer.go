package segment

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/segment/dated"
)

// A dated tag (docs/api.md §11) is served from one buffer per period: the
// double buffer every tag has (a current range, the next one prefetched
// at 10%), its fetches reserving ranges of the period's counter
// (PeriodStore.FetchPeriod) instead of the tag's row. datedTag holds the
// period being served and, from shortly before its end, the next
// period's buffer with its first range, so that the first ID after the
// boundary is served from memory.
//
// The instance's clock (Config.Now) decides the period at every claim:
// a claim reads the clock, and a period that does not contain the reading
// is turned (turn): the next period's buffer becomes current and the old
// one is retired, its unclaimed rest counted as wasted (period_ended).
// Retiring swaps the old range's cursor past its end, so a claim racing
// with it either got its number before the swap (issued, the clock it
// read being still in the period) or fails and claims again in the new
// period: no number of a period is issued on a clock reading after its
// end. The clock is bounded by the store's (dated_clock.go).

// leadFetches and minLead size the lead: the next period's first range is
// fetched max(minLead, leadFetches × the last fetch's duration) before
// the current period ends, so that a slow store still delivers it in
// time, and never earlier than a quarter of the period before (a
// period's numbers are reserved no sooner than needed).
const (
	minLead     = time.Second
	leadFetches = 4
)

// periodShare bounds a dated tag's adaptive step: at most 1/periodShare
// of a period's numbers per fetch (unless the row's step is larger), so
// that one instance cannot reserve a period's numbers ahead of the others
// (which would find it exhausted), and what a boundary wastes of its
// buffered ranges stays a small part of the period.
const periodShare = 100

// recentStamps is how long a retired period's high-water mark is kept:
// long enough for a stamp that comes round again when summer time ends
// (dated's doc) to check its new ranges against the ones it had.
const recentStamps = 3 * time.Hour

// period is the period a dated tag's period buffer counts.
type period struct {
	d   *datedTag
	key dated.Key
	// startNano and endNano are key's bounds in Unix nanoseconds: a claim
	// compares them with the clock's reading, cheaper than time.Time's.
	startNano, endNano int64
	// leadAt is when (Unix nanoseconds) the next period's first range is
	// fetched; nextAsked once it was.
	leadAt    int64
	nextAsked atomic.Bool
	// ended (under the buffer's mu): the period is over for this
	// allocator; it fetches and issues nothing more.
	ended bool
}

func (p *period) contains(ns int64) bool { return ns >= p.startNano && ns < p.endNano }

// datedTag is a dated tag's state: the current period's buffer, read
// lock-free by claims, and under mu the next period's, the timer that
// prefetches it, and the bookkeeping that outlives a period. Lock order:
// mu, then a period buffer's mu, then the tag's buffer's (head's) mu.
type datedTag struct {
	a       *Allocator
	head    *buffer // the tag's buffer in the allocator's map: its counts
	f       *dated.Format
	stepCap int64
	cur     atomic.Pointer[buffer] // nil before the first claim

	mu       sync.Mutex
	upcoming *buffer     // the next period's, fetched ahead; nil when none
	timer    *time.Timer // prefetches the next period of cur at its lead
	issued   int64       // IDs issued in periods no longer current
	// recent holds the high-water marks of periods retired within
	// recentStamps, by stamp.
	recent map[int64]seenStamp
}

type seenStamp struct{ high, endNano int64 }

func newDatedTag(head *buffer, f *dated.Format) *datedTag {
	return &datedTag{a: head.a, head: head, f: f, recent: map[int64]seenStamp{},
		stepCap: max(1, (f.MaxSeq()-f.Start()+1)/periodShare)}
}

// claim claims one sequence number of the period the clock reads now,
// returning that period's buffer (its key) and the number. Errors: the
// clock refusal (ErrClockSkew's), dated.ErrClockRange, an
// *dated.ExhaustedError, and advance's.
func (d *datedTag) claim(ctx context.Context) (*buffer, int64, error) {
	for {
		if e := d.a.clock.err.Load(); e != nil {
			return nil, 0, e
		}
		p := d.cur.Load()
		var per *period
		if p != nil {
			per = p.per
		}
		ns := d.a.datedNanos(per)
		if p == nil || !p.per.contains(ns) {
			now := d.a.now() // the real clock: a boundary is decided here
			ns = now.UnixNano()
			var err error
			if p, err = d.turn(now); err != nil {
				return nil, 0, err
			}
		}
		if ns >= p.per.leadAt && !p.per.nextAsked.Load() {
			d.prefetchNext(p)
		}
		s := p.cur.Load()
		seq := s.cursor.Add(1) - 1
		if seq <= s.end {
			if seq == s.prefetchAt {
				p.prefetch()
			}
			return p, seq, nil
		}
		if err := p.advance(ctx, s); err != nil {
			if errors.Is(err, ErrExhausted) && !p.per.contains(d.a.now().UnixNano()) {
				continue // spent, but over: the next period has numbers
			}
			return nil, 0, d.periodErr(p, err)
		}
	}
}

// claimN claims len(seqs) sequence numbers of one period into seqs and
// returns that period's buffer. A batch stays within one period and is
// claimed whole (fillBatch): one whose period ended while it waited for a
// fetch is claimed in the next, one whose period ended just after it was
// claimed is wasted (period_ended) and claimed again in the next, and one
// larger than what the period has left is refused (a *TooLargeError, or
// when nothing is left the period's exhaustion). Errors as claim's; on
// error seqs holds nothing usable.
func (d *datedTag) claimN(ctx context.Context, seqs []int64) (*buffer, error) {
	for {
		if e := d.a.clock.err.Load(); e != nil {
			return nil, e
		}
		p := d.cur.Load()
		var per *period
		if p != nil {
			per = p.per
		}
		ns := d.a.datedNanos(per)
		if p == nil || !p.per.contains(ns) {
			now := d.a.now()
			ns = now.UnixNano()
			var err error
			if p, err = d.turn(now); err != nil {
				return nil, err
			}
		}
		if ns >= p.per.leadAt && !p.per.nextAsked.Load() {
			d.prefetchNext(p)
		}
		err := p.fillBatch(ctx, seqs)
		switch {
		case errors.Is(err, errPeriodOver):
			continue // nothing claimed: claim it in the period the clock reads
		case err != nil:
			if (errors.Is(err, ErrExhausted) || errors.Is(err, ErrBatchTooLarge)) && !p.per.contains(d.a.now().UnixNano()) {
				continue // spent, but over: the next period has numbers
			}
			return nil, d.periodErr(p, err)
		case p.per.contains(d.a.now().UnixNano()):
			return p, nil
		}
		p.waste(int64(len(seqs)), WastePeriodEnded)
	}
}

// periodErr is the answer to a claim of period p that failed with err: a
// spent period's counter is the period's exhaustion, with the wait until
// the next begins; any other error is itself.
func (d *datedTag) periodErr(p *buffer, err error) error {
	if !errors.Is(err, ErrExhausted) {
		return err
	}
	k := p.per.key
	return &dated.ExhaustedError{Stamp: k.Stamp, Next: k.End, RetryAfter: max(0, k.End.Sub(d.a.now()))}
}

// turn makes the period that contains now current, unless another claim
// did: the next period's buffer when it was fetched ahead for it, else a
// new one. The period it replaces is retired, or, when the clock stepped
// back before its start, kept as the next.
func (d *datedTag) turn(now time.Time) (*buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ns := now.UnixNano()
	cur := d.cur.Load()
	if cur != nil && cur.per.contains(ns) {
		return cur, nil
	}
	if d.a.closed.Load() {
		return nil, ErrClosed // Close gave back what it could; no new period
	}
	k, err := d.f.Of(now)
	if err != nil {
		return nil, err
	}
	next := d.upcoming
	d.upcoming = nil
	if next == nil || next.per.key.Stamp != k.Stamp || next.per.startNano != k.Start.UnixNano() {
		switch {
		case next == nil:
		case next.per.endNano <= ns:
			d.retire(next) // fetched ahead, and its period passed unserved
		default:
			d.upcoming = next // still to come: the clock stepped back
		}
		next = d.newPeriod(k, cur)
	}
	d.cur.Store(next)
	if cur != nil {
		if cur.per.startNano > ns && d.upcoming == nil {
			d.upcoming = cur
		} else {
			d.retire(cur)
		}
	}
	d.arm(next, now)
	return next, nil
}

// retire ends period buffer p: nothing more is fetched or issued of it,
// and its unclaimed numbers are wasted (period_ended), never given back.
// d.mu is held.
func (d *datedTag) retire(p *buffer) {
	p.mu.Lock()
	p.per.ended = true
	s := p.cur.Load()
	// Swapped past the end: a claim racing with this either got its
	// number before (issued) or lands past the end and claims again.
	from := max(s.cursor.Swap(s.end+1), s.start)
	left := max(0, s.end-from+1)
	issued := p.retired + s.size() - left
	left += p.queuedLocked()
	p.next = nil
	// Wake whoever waits for a fetch of it: they claim again, in the
	// period the clock reads, rather than wait for a range never served.
	p.wakeLocked()
	high := p.highWater
	p.mu.Unlock()
	d.issued += issued
	if high > 0 {
		d.recent[p.per.key.Stamp] = seenStamp{high: high, endNano: p.per.endNano}
	}
	for stamp, seen := range d.recent {
		if p.per.endNano-seen.endNano > int64(recentStamps) {
			delete(d.recent, stamp)
		}
	}
	p.waste(left, WastePeriodEnded)
}

// newPeriod makes the buffer of period k. It starts from prev's adaptive
// step, and from the high-water mark of k's stamp if a period of that
// stamp was retired lately (a stamp that comes round again continues
// its counter, which must not go back). d.mu is held.
func (d *datedTag) newPeriod(k dated.Key, prev *buffer) *buffer {
	h := d.head
	b := &buffer{a: d.a, tag: h.tag, kind: h.kind}
	b.cur.Store(noSpan)
	var took time.Duration
	if prev != nil {
		prev.mu.Lock()
		b.step, b.rowStep, b.lastFetch, took = prev.step, prev.rowStep, prev.lastFetch, prev.fetchTook
		prev.mu.Unlock()
	}
	if seen, ok := d.recent[k.Stamp]; ok {
		b.highWater = seen.high
	}
	lead := min(max(minLead, leadFetches*took), k.End.Sub(k.Start)/4)
	b.per = &period{d: d, key: k, startNano: k.Start.UnixNano(), endNano: k.End.UnixNano(),
		leadAt: k.End.Add(-lead).UnixNano()}
	return b
}

// arm sets the timer that fetches the period after p's at p's lead, for
// a tag without a claim then; a claim after the lead fetches it too.
// Stopped by Close. d.mu is held.
func (d *datedTag) arm(p *buffer, now time.Time) {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = time.AfterFunc(time.Duration(p.per.leadAt-now.UnixNano()), func() { d.prefetchNext(p) })
}

// prefetchNext starts the fetch of the first range of the period after
// p's, once per period, while p is current.
func (d *datedTag) prefetchNext(p *buffer) {
	if !p.per.nextAsked.CompareAndSwap(false, true) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur.Load() != p || d.upcoming != nil || d.a.closed.Load() {
		return
	}
	k, err := d.f.Of(p.per.key.End)
	if err != nil {
		return // past year 9999: the claim in it will say so
	}
	up := d.newPeriod(k, p)
	d.upcoming = up
	up.mu.Lock()
	up.startFetchLocked()
	up.mu.Unlock()
}
