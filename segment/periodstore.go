package segment

import (
	"context"
	"time"
)

// FormatDated serves business numbers that carry their period and restart
// each period (docs/api.md §11): stamp and sequence, the sequence counted per
// (tag, period) in the store. Its settings beyond Length and Start (period,
// time zone, prefix, separator) travel as Tag.FormatSpec, encoded by
// package segment/dated.
const FormatDated Format = "dated"

// PeriodStore is what a store provides, besides Store, to keep dated tags:
// one counter per (tag, period stamp), advanced by the same compare-and-set
// as every segment, so that a (stamp, sequence) pair is handed out once
// across instances, restarts and every fault. The allocator finds it on its
// Store by a type assertion; a store without it cannot keep dated tags
// (CreateTag refuses them with ErrFormatUnsupported).
type PeriodStore interface {
	// FetchPeriod reserves the next range of tag's counter for the period
	// stamp. A period without a row yet starts at start-1 (the row made by
	// an insert that loses harmlessly to a concurrent one, then the same
	// compare-and-set). The counter moves from max_id to
	// min(max_id+delta, limit), delta being step when step > 0, else the
	// tag's row step, by a compare-and-set whose success alone proves the
	// range (MaxID-Size, MaxID]; Size may be below delta at the period's
	// end. Fetched.Now is the store's clock, read in the same round trip
	// as the counter, for the allocator's skew check. Errors:
	// ErrUnknownTag when tag has no row in segments; ErrExhausted when
	// max_id is at limit already (the period's numbers are spent);
	// anything else is a store fault.
	FetchPeriod(ctx context.Context, tag string, stamp, start, limit, step int64) (Fetched, error)

	// GiveBackPeriod sets the counter of (tag, stamp) to newMax only if it
	// still equals oldMax (compare-and-set), returning whether it did: the
	// unused rest of the current period's range, on a graceful stop.
	GiveBackPeriod(ctx context.Context, tag string, stamp, oldMax, newMax int64) (bool, error)

	// Now reads the store's clock: the bound the instance's own clock is
	// checked against (dated.max_clock_skew) while no fetch reads it.
	Now(ctx context.Context) (time.Time, error)
}
