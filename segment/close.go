package segment

import (
	"context"
	"errors"
	"fmt"
)

// Close stops issuing IDs, waits for the background goroutines, and gives the
// unused IDs back to the store (guarantee 3: a single instance restarted
// gracefully wastes none). It is idempotent; later calls return the first
// call's result.
func (a *Allocator) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		a.lifeMu.Lock()
		a.closed.Store(true)
		close(a.closing)
		a.lifeMu.Unlock()
		a.wg.Wait()
		var errs []error
		for _, b := range *a.tags.Load() {
			if err := b.giveBack(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

// giveBack retires the buffer and returns its unused IDs by compare-and-set
// on max_id. Only a suffix of unused IDs that ends at the row's max_id can be
// returned: an ID below a range another instance fetched belongs to no one
// once we stop, but handing it back would let that instance's range be
// fetched again.
func (b *buffer) giveBack(ctx context.Context) error {
	b.mu.Lock()
	s := b.cur.Load()
	b.cur.Store(emptySpan())
	// Swap past the end: a claim racing with Close either got an ID below
	// the swapped-out cursor (it is issued) or lands past the end and fails.
	unusedFrom := max(s.cursor.Swap(s.end+1), s.start)
	next := b.next
	b.next = nil
	b.mu.Unlock()

	curLeft := max(0, s.end-unusedFrom+1)
	var high, low, wasted int64
	switch {
	case next != nil && (curLeft == 0 || s.end+1 == next.start):
		high, low = next.end, next.start
		if curLeft > 0 {
			low = unusedFrom
		}
	case next != nil:
		high, low, wasted = next.end, next.start, curLeft
	case curLeft > 0:
		high, low = s.end, unusedFrom
	default:
		return nil
	}
	obs, log := b.a.cfg.Observer, b.a.cfg.Logger
	ok, err := b.a.store.GiveBack(ctx, b.tag, high, low-1)
	if err != nil || !ok {
		wasted += high - low + 1
	} else {
		log.Info("gave back unused IDs", "app_tag", b.tag, "ids", high-low+1, "next_id", low)
		if obs != nil {
			obs.GaveBack(b.tag, high-low+1)
		}
	}
	if wasted > 0 {
		// Not given back: another instance fetched after us, or the store
		// failed. A gap, never a duplicate.
		log.Info("unused IDs not given back", "app_tag", b.tag, "ids", wasted, "err", err)
		if obs != nil {
			obs.Wasted(b.tag, wasted)
		}
	}
	if err != nil {
		return fmt.Errorf("give back %q: %w", b.tag, err)
	}
	return nil
}
