package segment

import "time"

// PeriodStats is a dated tag's current period as this allocator serves
// it: what GET /tags, INFO and the monitor page show of it (docs/api.md §11).
// It is zero for the other formats, and before a dated tag's first ID.
type PeriodStats struct {
	// Stamp is the period's stamp (20261126 for a day); Start and End its
	// stretch of real time, End being when the next period begins.
	Stamp      int64
	Start, End time.Time
	// Issued is how many of the period's numbers this allocator issued.
	// Other instances' are not in it: Counter is the count across them.
	Issued int64
	// Counter is the store's counter of the period as this allocator
	// last saw it, right after its last fetch of the period: the highest
	// sequence number any instance had reserved then (issued or still
	// buffered); 0 before this allocator's first fetch of the period.
	Counter int64
	// Left is how many of the period's numbers may still be issued, as
	// far as this allocator knows: those no instance had reserved at its
	// last fetch (up to 10^length − 1), plus those it holds buffered.
	Left int64
	// NextPrefetched is the size of the next period's first range,
	// fetched ahead of its start; 0 when none is.
	NextPrefetched int64
}

// snapshot is a dated tag's TagSnapshot: the shape of its current
// period's double buffer, its counts over every period, and the period.
func (d *datedTag) snapshot() TagSnapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	var snap TagSnapshot
	if p := d.cur.Load(); p != nil {
		snap = p.snapshot()
		k := p.per.key
		snap.Period = PeriodStats{Stamp: k.Stamp, Start: k.Start, End: k.End, Issued: snap.Issued, Counter: snap.MaxID,
			Left: snap.Buffered + d.f.MaxSeq() - max(snap.MaxID, d.f.Start()-1)}
	}
	if up := d.upcoming; up != nil {
		snap.Period.NextPrefetched = up.stats().Buffered
	}
	h := d.head
	h.mu.Lock()
	snap.GivenBack, snap.Wasted, snap.Refills = h.givenBack, h.wasted, h.refills
	h.mu.Unlock()
	snap.AppTag, snap.Format, snap.Length = h.tag, h.kind.format, h.kind.length
	snap.Issued += d.issued
	return snap
}
