package segment

import (
	"context"
	"iter"
)

// TagStats is a point-in-time view of one tag in this allocator. For a
// dated tag, Buffered and Step are its current period's, Issued,
// GivenBack and Wasted count every period, and Period shows the current
// one.
type TagStats struct {
	AppTag    string
	Format    Format // the tag's number format (never empty)
	Length    int    // its digit count (a dated tag's sequence part's); 0 for sequential
	Buffered  int64  // IDs left in memory (current + prefetched segments)
	Step      int64  // current adaptive step (0 before the first fetch)
	Issued    int64  // IDs handed out by this allocator since it started
	GivenBack int64  // IDs returned to the store on Close
	Wasted    int64  // IDs reserved and never to be issued, every WasteReason
	// Refills counts the ranges this allocator received from the store
	// and queued since it started: its double buffer's refills, every
	// period's for a dated tag.
	Refills int64
	// Period is a dated tag's current period; zero for other formats.
	Period PeriodStats
}

// Buffered returns the IDs of tag buffered in memory.
func (a *Allocator) Buffered(tag string) (int64, error) {
	b, err := a.buffer(context.Background(), tag)
	if err != nil {
		return 0, err
	}
	return b.stats().Buffered, nil
}

// TotalBuffered returns the IDs buffered over all tags.
func (a *Allocator) TotalBuffered() int64 {
	var n int64
	a.index.each(func(b *buffer) { n += b.stats().Buffered })
	return n
}

// AllStats yields every tag's TagStats, as Stats lists them, in no order,
// one at a time: a pass over 100,000 tags (a metrics scrape) builds no
// slice of them. Tags added during the pass may or may not be yielded.
func (a *Allocator) AllStats() iter.Seq[TagStats] {
	return func(yield func(TagStats) bool) {
		stopped := false
		a.index.each(func(b *buffer) {
			stopped = stopped || !yield(b.stats())
		})
	}
}

// Stats reports every known tag.
func (a *Allocator) Stats() []TagStats {
	out := make([]TagStats, 0, a.index.len())
	a.index.each(func(b *buffer) { out = append(out, b.stats()) })
	return out
}

func (b *buffer) stats() TagStats {
	if b.dated != nil {
		return b.dated.snapshot().TagStats
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statsLocked()
}

func (b *buffer) statsLocked() TagStats {
	s := b.cur.Load()
	return TagStats{AppTag: b.tag, Format: b.kind.format, Length: b.kind.length, Step: b.step,
		Buffered: s.left() + b.queuedLocked(), Issued: b.retired + s.size() - s.left(), GivenBack: b.givenBack, Wasted: b.wasted,
		Refills: b.refills}
}
