package segment

import (
	"context"
	"errors"
	"fmt"
)

// Close stops issuing IDs, waits for the background goroutines, and gives the
// unused IDs back to the store (guarantee 3: a single instance restarted
// gracefully wastes none). ctx bounds it all: when ctx ends while a fetch is
// still under way, Close stops waiting for it and gives back what is
// buffered at once (with ctx ended, the store will refuse, and the IDs
// count as wasted). It is idempotent; later calls return the first call's
// result.
func (a *Allocator) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		a.lifeMu.Lock()
		a.closed.Store(true)
		close(a.closing)
		a.lifeMu.Unlock()
		var errs []error
		if err := a.waitGoroutines(ctx); err != nil {
			errs = append(errs, err)
		}
		a.index.each(func(b *buffer) {
			if err := b.giveBack(ctx); err != nil {
				errs = append(errs, err)
			}
		})
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

// waitGoroutines waits for the fetch and refresh goroutines to end, or for
// ctx. A fetch left running may still commit a range; the allocator being
// closed, nothing serves it, and it is never given back: a gap, never a
// duplicate. Nor does its race with a give-back of the same tag make one:
// whichever compare-and-set on max_id the store applies first, the range
// fetched is never served and the range given back was never issued.
func (a *Allocator) waitGoroutines(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for segment fetches under way: %w", ctx.Err())
	}
}

// giveBack retires the buffer and returns its unused IDs by compare-and-set
// on max_id. Only a suffix of unused IDs that ends at the row's max_id can be
// returned: an ID below a range another instance fetched belongs to no one
// once we stop, but handing it back would let that instance's range be
// fetched again. It works on the tag's sequence, so a scrambled tag gives
// back the unused sequence numbers, whose IDs are then issued after a
// restart, once. max_id is compared with the store's value after the
// last span's fetch (top), which in a region may lie beyond its end's
// number; only IDs are counted.
//
// A dated tag gives back the unused rest of its current period's range
// (and of the next period's, if fetched ahead) to the period's counter;
// a period that has ended gives back nothing (dated_close.go).
func (b *buffer) giveBack(ctx context.Context) error {
	if b.dated != nil {
		return b.dated.giveBack(ctx)
	}
	b.mu.Lock()
	s := b.cur.Load()
	b.cur.Store(noSpan)
	// Swap past the end: a claim racing with Close either got an ID below
	// the swapped-out cursor (it is issued) or lands past the end and fails.
	unusedFrom := max(s.cursor.Swap(s.end+1), s.start)
	var queued []*span
	for q := b.next; q != nil; q = q.after {
		queued = append(queued, q)
	}
	b.next = nil
	b.mu.Unlock()

	// The unused IDs are the current segment's from unusedFrom, then
	// every prefetched one whole. last is the span whose unused IDs end
	// the give-back, low the first of them; walking back, each span that
	// ends where the next begins joins in, and the unused IDs below the
	// first that does not are interleaved.
	curLeft := max(0, s.end-unusedFrom+1)
	last, low := s, unusedFrom
	if len(queued) > 0 {
		last, low = queued[len(queued)-1], queued[len(queued)-1].start
	} else if curLeft == 0 {
		return nil
	}
	var interleaved int64
	for i := len(queued) - 2; i >= -1; i-- {
		prev, from := s, unusedFrom
		if i >= 0 {
			prev, from = queued[i], queued[i].start
		}
		switch left := max(0, prev.end-from+1); {
		case interleaved > 0 || prev.end+1 != low && left > 0:
			interleaved += left
		case left > 0:
			low = from
		}
	}
	b.waste(interleaved, WasteInterleaved)
	log := b.a.cfg.Logger
	// max_id goes back to just below the first unused index's number:
	// in a region, the numbers of other residues between it and top
	// were reserved with the range and never issued by anyone.
	firstUnused := b.a.region.number(low)
	var ok bool
	var err error
	if b.per != nil {
		ok, err = b.a.periods.GiveBackPeriod(ctx, b.tag, b.per.key.Stamp, last.top, firstUnused-1)
	} else {
		ok, err = b.a.store.GiveBack(ctx, b.tag, last.top, firstUnused-1)
	}
	n, notBack := last.end-low+1, interleaved
	switch {
	case err != nil:
		b.waste(n, WasteGiveBackFailed)
		notBack += n
	case !ok:
		b.waste(n, WasteGiveBackRefused)
		notBack += n
	default:
		if b.per != nil {
			log.Info("gave back unused IDs", "app_tag", b.tag, "period", b.per.key.Stamp, "ids", n, "next_id", firstUnused)
		} else {
			log.Info("gave back unused IDs", "app_tag", b.tag, "ids", n, "next_id", firstUnused)
		}
		o := b.owner()
		o.mu.Lock()
		o.givenBack += n
		o.mu.Unlock()
		if obs := b.a.cfg.Observer; obs != nil {
			obs.GaveBack(b.tag, n)
		}
	}
	if notBack > 0 {
		// Another instance fetched after us, or the store failed. A gap,
		// never a duplicate.
		log.Info("unused IDs not given back", "app_tag", b.tag, "ids", notBack, "err", err)
	}
	if err != nil {
		return fmt.Errorf("give back %q: %w", b.tag, err)
	}
	return nil
}
