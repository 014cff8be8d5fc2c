package segment

import "time"

// TagSnapshot is TagStats with the shape of the tag's double buffer: what
// Leaf's /cache page shows, for idalloc's monitor page. Like TagStats it
// never carries a scrambled tag's key. A dated tag's is the shape of its
// current period's double buffer, its MaxID that period's counter as
// last seen (Period.Counter), and its fetch fields that period's.
type TagSnapshot struct {
	TagStats
	// CurrentLeft and CurrentSize are the current segment's unclaimed IDs
	// and its size; both 0 before the first fetch. Buffered is
	// CurrentLeft + Prefetched.
	CurrentLeft, CurrentSize int64
	// Prefetched is the size of the segments fetched in the background
	// and not yet current; 0 when none is ready.
	Prefetched int64
	// RowStep is the row's own step (the adaptive step's floor), as of the
	// last fetch, or before the first as of the last tag-list reload.
	RowStep int64
	// MaxID is the store's max_id right after this allocator's last
	// fetch: the end of the highest range it holds. For a scrambled tag it
	// counts the sequence, not the IDs. 0 before the first fetch.
	MaxID int64
	// LastFetch is when the last successful fetch ended (by Config.Now),
	// zero before the first; LastFetchTook is how long it took.
	LastFetch     time.Time
	LastFetchTook time.Duration
	// Fetching: a fetch is under way. Failing: the last attempt failed,
	// the store being unreachable or the tag spent or gone.
	Fetching, Failing bool
}

// Snapshot returns tag's snapshot without asking the store; false when
// this allocator serves no such tag (yet: a tag created on another
// instance is served from the next reload). It costs a lookup and the
// tag's lock whatever the tag count, so that a page of a listing costs
// what the page holds. The lock is the one its fetches take for their
// bookkeeping, as Stats reads it; the ID path (Next's claim) never takes
// it, and it is held for a few loads. RowStep is 0 when the buffer does
// not know the row's step yet; the caller has the row (Tags).
func (a *Allocator) Snapshot(tag string) (TagSnapshot, bool) {
	b := a.index.get(tag)
	if b == nil {
		return TagSnapshot{}, false
	}
	return b.snapshot(), true
}

func (b *buffer) snapshot() TagSnapshot {
	if b.dated != nil {
		return b.dated.snapshot()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	snap := TagSnapshot{
		TagStats:      b.statsLocked(),
		RowStep:       b.rowStep,
		MaxID:         b.highWater,
		LastFetch:     b.lastFetch,
		LastFetchTook: b.fetchTook,
		Fetching:      b.fetching,
		Failing:       b.trouble != nil,
	}
	snap.Prefetched = b.queuedLocked()
	// From Buffered rather than a second read of the cursor, which
	// concurrent claims may have moved: the parts add up to the whole.
	snap.CurrentLeft = snap.Buffered - snap.Prefetched
	snap.CurrentSize = b.cur.Load().size()
	return snap
}
