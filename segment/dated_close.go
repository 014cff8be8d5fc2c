package segment

import (
	"context"
	"errors"
)

// giveBack is Close's give-back for a dated tag. The current period's
// unused numbers go back to its counter by the same compare-and-set as a
// segment's (PeriodStore.GiveBackPeriod), and so do those of the next
// period's range fetched ahead: neither period has ended, so the numbers
// are issued after a restart, once. A period that has ended by the
// clock gives back nothing: its numbers may no longer be issued by
// anyone, so they are counted as wasted (period_ended) instead. It stops
// the lead timer, so nothing is fetched ahead after Close.
func (d *datedTag) giveBack(ctx context.Context) error {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	ns := d.a.now().UnixNano()
	var open []*buffer
	for _, p := range [...]*buffer{d.cur.Load(), d.upcoming} {
		switch {
		case p == nil:
		case p.per.endNano <= ns:
			d.retire(p)
		default:
			open = append(open, p)
		}
	}
	d.upcoming = nil
	d.mu.Unlock()
	var errs []error
	for _, p := range open { // store calls, outside d.mu
		if err := p.giveBack(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
