package segment

import (
	"context"
	"errors"
	"fmt"
)

// WasteReason says why reserved IDs will never be issued. Each is a gap in
// the tag's sequence, never a duplicate. The set is closed: metrics may
// label by it.
type WasteReason string

// The reasons, as the allocator learns of them. Only what is certain is
// counted: a fetch that failed after its deadline (ErrFetchTimedOut) may or
// may not have reserved a range, so its IDs are not counted here, and a range
// refused as rewound (ErrRewound) is the store's confusion, counted as a
// refused range instead.
const (
	// WasteBatch: a batch claimed whole whose IDs could not be made of
	// its indexes (a scrambled tag's permutation refusing one, which its
	// limit rules out). A batch that cannot be claimed whole claims
	// nothing (batch.go), so this is the reason's only case.
	WasteBatch WasteReason = "batch_failed"
	// WasteInterleaved: at Close, the unused IDs of a segment (the rest
	// of the current one, or a prefetched one) when another instance
	// fetched a range between it and the next prefetched one. Only IDs up
	// to the row's max_id can be handed back; these lie below another
	// instance's range.
	WasteInterleaved WasteReason = "interleaved"
	// WasteGiveBackRefused: at Close, the row's max_id had moved on (another
	// instance fetched after this one), so the unused IDs cannot be handed
	// back.
	WasteGiveBackRefused WasteReason = "give_back_refused"
	// WasteGiveBackFailed: at Close, the store failed the give-back.
	WasteGiveBackFailed WasteReason = "give_back_failed"
	// WastePeriodEnded: a dated tag's numbers of a period that ended
	// before they were issued (the rest of its ranges, a range that
	// arrived after it ended, a batch its end cut short), which are never
	// issued after its end, nor given back.
	WastePeriodEnded WasteReason = "period_ended"
)

// WasteReasons lists every WasteReason, for metrics to expose at 0.
func WasteReasons() []WasteReason {
	return []WasteReason{WasteBatch, WasteInterleaved, WasteGiveBackRefused, WasteGiveBackFailed, WastePeriodEnded}
}

// ErrFetchTimedOut wraps the error of a Store.Fetch that failed after its
// deadline (Config.FetchTimeout). The store may have committed the range
// before the call was cut short; this allocator never uses it, so it may be
// a gap of up to the step asked for. Nothing tells whether it was, so it is
// not counted as wasted. It is retried like any store fault.
var ErrFetchTimedOut = errors.New("segment fetch timed out; the store may have reserved the range all the same, which is then never used")

// owner is the buffer that counts b's IDs given back and wasted: b, or
// for a dated tag's period buffer, the tag's buffer, whose counts
// outlive its periods.
func (b *buffer) owner() *buffer {
	if b.per != nil {
		return b.per.d.head
	}
	return b
}

// timedStore is the allocator's view of its store: it marks a Fetch that
// failed after its context's deadline with ErrFetchTimedOut.
type timedStore struct{ Store }

func (s timedStore) Fetch(ctx context.Context, tag string, limit, step int64) (Fetched, error) {
	f, err := s.Store.Fetch(ctx, tag, limit, step)
	return f, timedOut(ctx, err)
}

// timedPeriods is timedStore for a PeriodStore.
type timedPeriods struct{ PeriodStore }

func (s timedPeriods) FetchPeriod(ctx context.Context, tag string, stamp, start, limit, step int64) (Fetched, error) {
	f, err := s.PeriodStore.FetchPeriod(ctx, tag, stamp, start, limit, step)
	return f, timedOut(ctx, err)
}

// timedOut marks err, a fetch's, with ErrFetchTimedOut when it failed
// after ctx's deadline.
func timedOut(ctx context.Context, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !isFinal(err) {
		err = fmt.Errorf("%w: %w", ErrFetchTimedOut, err)
	}
	return err
}

// waste records n IDs of b's that will never be issued. A dated tag's
// period buffers count them on the tag's buffer (owner).
func (b *buffer) waste(n int64, why WasteReason) {
	if n <= 0 {
		return
	}
	o := b.owner()
	o.mu.Lock()
	o.wasted += n
	o.mu.Unlock()
	if obs := b.a.cfg.Observer; obs != nil {
		obs.Wasted(b.tag, n, why)
	}
}
