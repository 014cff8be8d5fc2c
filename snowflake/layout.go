package snowflake

import (
	"fmt"
	"time"
)

const (
	// TimeBits is the width of the timestamp field: 2^41 ms is about 69.7 years.
	TimeBits = 41
	// DefaultWorkerBits is the worker-ID width used when none is given,
	// leaving 12 bits (4096 IDs per ms) for the sequence.
	DefaultWorkerBits = 10
	// lowBits is shared by the worker and sequence fields of the default
	// layout; with the sign bit and TimeBits it fills 64 bits.
	lowBits = 63 - TimeBits
	// JS53Bits is the width of a JS53 layout's IDs: at most 2^53-1, so
	// every one is a safe integer in JavaScript (docs/api.md §2).
	JS53Bits = 53
	// JS53WorkerBits is a JS53 layout's worker-ID width when none is given:
	// 64 workers, each with 64 IDs per millisecond.
	JS53WorkerBits = 6
	// js53LowBits is shared by a JS53 layout's worker and sequence fields.
	js53LowBits = JS53Bits - TimeBits
	// maxElapsedMS is the highest millisecond offset from the epoch an ID can carry.
	maxElapsedMS = 1<<TimeBits - 1
)

// defaultEpochMS is 2026-01-01T00:00:00Z: a recent epoch leaves the most of
// the 69.7 years ahead (uid-generator's 2016 epoch with 28 bits of seconds ran
// out in 2024).
const defaultEpochMS = 1767225600000

// Layout says how an ID's bits split into timestamp, worker ID and
// sequence: the default layout's 63 usable bits, or a JS53 layout's 53.
// Make one with NewLayout or NewJS53Layout; the zero Layout is invalid.
type Layout struct {
	// Epoch is the instant timestamps count from, whole milliseconds in UTC.
	Epoch time.Time
	// TimeBits is always 41, of milliseconds.
	TimeBits int
	// WorkerBits is the worker-ID width: 1..21, or 1..11 in a JS53 layout.
	WorkerBits int
	// SequenceBits is 22 - WorkerBits, or 12 - WorkerBits in a JS53 layout.
	SequenceBits int
}

// Parts is an ID taken apart by Layout.Decompose.
type Parts struct {
	ID          int64
	Time        time.Time // the timestamp as a UTC time
	TimestampMS int64     // the timestamp in Unix milliseconds
	WorkerID    int64
	Sequence    int64
}

// NewLayout returns the layout for epoch and workerBits. A zero epoch means
// 2026-01-01T00:00:00Z and 0 worker bits mean DefaultWorkerBits. The epoch is
// truncated to the millisecond, since IDs cannot carry less.
//
// It returns ErrInvalidLayout for worker bits outside 1..21 or an epoch
// outside the years 1..9999. It does not judge how long the layout lasts; New
// refuses one that runs out within 10 years.
func NewLayout(epoch time.Time, workerBits int) (Layout, error) {
	if workerBits == 0 {
		workerBits = DefaultWorkerBits
	}
	return newLayout(epoch, lowBits, workerBits)
}

// NewJS53Layout returns the layout whose IDs never exceed 2^53-1
// (JavaScript's Number.MAX_SAFE_INTEGER) for epoch and workerBits: the
// default layout's 41 bits of milliseconds, with 12 bits, not 22, for the
// worker ID and sequence (docs/api.md §2). A zero epoch means
// 2026-01-01T00:00:00Z and 0 worker bits mean JS53WorkerBits. It returns
// ErrInvalidLayout for worker bits outside 1..11 or an epoch outside the
// years 1..9999.
func NewJS53Layout(epoch time.Time, workerBits int) (Layout, error) {
	if workerBits == 0 {
		workerBits = JS53WorkerBits
	}
	return newLayout(epoch, js53LowBits, workerBits)
}

// newLayout shares low bits between workerBits and the sequence.
func newLayout(epoch time.Time, low, workerBits int) (Layout, error) {
	if epoch.IsZero() {
		epoch = time.UnixMilli(defaultEpochMS)
	}
	if workerBits < 1 || workerBits > low-1 {
		return Layout{}, fmt.Errorf("worker bits %d outside 1..%d: %w", workerBits, low-1, ErrInvalidLayout)
	}
	if !epochInRange(epoch) {
		return Layout{}, fmt.Errorf("epoch %s outside the years 1..9999: %w", epoch.Format(time.RFC3339), ErrInvalidLayout)
	}
	return Layout{
		Epoch:        time.UnixMilli(epoch.UnixMilli()).UTC(),
		TimeBits:     TimeBits,
		WorkerBits:   workerBits,
		SequenceBits: low - workerBits,
	}, nil
}

// IDBits returns how many low bits an ID of l may use: 63, or JS53Bits in
// a JS53 layout. Every ID of l is below 2^IDBits.
func (l Layout) IDBits() int { return l.TimeBits + l.WorkerBits + l.SequenceBits }

// JS53 reports whether l is a JS53 layout, whose IDs are safe integers in
// JavaScript.
func (l Layout) JS53() bool { return l.IDBits() == JS53Bits }

// timeShift returns the width of the worker and sequence fields together,
// the shift of the timestamp.
func (l Layout) timeShift() int { return l.WorkerBits + l.SequenceBits }

// epochInRange bounds the epoch to the years 1..9999, which keeps every
// Unix-millisecond sum in this package clear of overflow.
func epochInRange(epoch time.Time) bool {
	y := epoch.UTC().Year()
	return y >= 1 && y <= 9999
}

// check refuses hand-made layouts whose shifts would corrupt IDs.
func (l Layout) check() error {
	if low := l.timeShift(); l.TimeBits != TimeBits || l.WorkerBits < 1 || l.SequenceBits < 1 ||
		low != lowBits && low != js53LowBits {
		return fmt.Errorf("layout %d/%d/%d bits: %w", l.TimeBits, l.WorkerBits, l.SequenceBits, ErrInvalidLayout)
	}
	if !epochInRange(l.Epoch) {
		return fmt.Errorf("layout epoch %s outside the years 1..9999: %w", l.Epoch.Format(time.RFC3339), ErrInvalidLayout)
	}
	return nil
}

// MaxWorkerID returns the highest worker ID the layout can carry, 2^WorkerBits-1.
func (l Layout) MaxWorkerID() int64 { return 1<<l.WorkerBits - 1 }

// RegionWorkerIDs returns the worker IDs of region id of count (docs/api.md
// §13): the n = ⌊2^WorkerBits / count⌋ IDs from first = id·n, so that the
// regions' ranges are disjoint and instances of different regions never
// share a worker ID although each region leases from a store of its own.
// A region's lease store grants 0..n−1, and its generators add first.
// A single region (count 0 or 1) has them all. Errors: ErrTooManyRegions
// when count exceeds 2^WorkerBits (a region would have none), and
// ErrInvalidWorkerID for an id outside 0..count−1.
func (l Layout) RegionWorkerIDs(count, id int64) (first, n int64, err error) {
	count = max(count, 1)
	workers := l.MaxWorkerID() + 1
	switch {
	case count > workers:
		return 0, 0, fmt.Errorf("%d regions, %d worker IDs (%d worker bits): %w", count, workers, l.WorkerBits, ErrTooManyRegions)
	case id < 0 || id >= count:
		return 0, 0, fmt.Errorf("region %d of %d: %w", id, count, ErrInvalidWorkerID)
	}
	n = workers / count
	return id * n, n, nil
}

// MaxSequence returns the highest sequence number, 2^SequenceBits-1: a worker
// issues at most MaxSequence+1 IDs per millisecond.
func (l Layout) MaxSequence() int64 { return 1<<l.SequenceBits - 1 }

// CheckLifetime is the rule for starting a deployment on l: its epoch is
// not after now (ErrInvalidLayout), and its time bits last at least 10
// more years (ErrLayoutTooShort), uid-generator's 28 bits of seconds having
// run out eight years after their epoch.
func (l Layout) CheckLifetime(now time.Time) error {
	if err := l.check(); err != nil {
		return err
	}
	if l.Epoch.After(now) {
		return epochAfter(l, now)
	}
	if end := l.End(); end.Before(now.AddDate(minLifetime, 0, 0)) {
		return fmt.Errorf("time bits run out at %s, less than %d years from now: %w",
			end.Format(time.RFC3339), minLifetime, ErrLayoutTooShort)
	}
	return nil
}

func epochAfter(l Layout, now time.Time) error {
	return fmt.Errorf("epoch %s is after now (%s): %w",
		l.Epoch.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), ErrInvalidLayout)
}

// End returns the first instant the time bits cannot carry.
func (l Layout) End() time.Time {
	return time.UnixMilli(l.Epoch.UnixMilli() + maxElapsedMS + 1).UTC()
}

// Compose builds the ID for a Unix-millisecond timestamp, worker ID and
// sequence. It returns ErrInvalidID for a timestamp before the epoch or a
// sequence out of range, ErrTimeExhausted for a timestamp at or after End,
// ErrInvalidWorkerID for a worker ID out of range, and ErrInvalidLayout for a
// layout NewLayout or NewJS53Layout did not make.
func (l Layout) Compose(unixMS, workerID, sequence int64) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	epochMS := l.Epoch.UnixMilli()
	switch {
	case unixMS < epochMS: // compared before subtracting, which could overflow
		return 0, fmt.Errorf("timestamp %d before epoch %d: %w", unixMS, epochMS, ErrInvalidID)
	case unixMS-epochMS > maxElapsedMS:
		return 0, fmt.Errorf("timestamp %d at or after %s: %w", unixMS, l.End().Format(time.RFC3339), ErrTimeExhausted)
	case workerID < 0 || workerID > l.MaxWorkerID():
		return 0, fmt.Errorf("worker ID %d outside 0..%d: %w", workerID, l.MaxWorkerID(), ErrInvalidWorkerID)
	case sequence < 0 || sequence > l.MaxSequence():
		return 0, fmt.Errorf("sequence %d outside 0..%d: %w", sequence, l.MaxSequence(), ErrInvalidID)
	}
	return (unixMS-epochMS)<<l.timeShift() | workerID<<l.SequenceBits | sequence, nil
}

// Decompose takes an ID apart. Every int64 in 0..2^IDBits-1 is a
// well-formed ID of l (every non-negative one, in the default layout); it
// returns ErrInvalidID for any other and ErrInvalidLayout for a layout
// NewLayout or NewJS53Layout did not make.
func (l Layout) Decompose(id int64) (Parts, error) {
	if err := l.check(); err != nil {
		return Parts{}, err
	}
	if id < 0 {
		return Parts{}, fmt.Errorf("id %d is negative: %w", id, ErrInvalidID)
	}
	if id>>l.IDBits() != 0 {
		return Parts{}, fmt.Errorf("id %d is above 2^%d-1, the highest of this layout: %w", id, l.IDBits(), ErrInvalidID)
	}
	ts := id>>l.timeShift() + l.Epoch.UnixMilli()
	return Parts{
		ID:          id,
		Time:        time.UnixMilli(ts).UTC(),
		TimestampMS: ts,
		WorkerID:    id >> l.SequenceBits & l.MaxWorkerID(),
		Sequence:    id & l.MaxSequence(),
	}, nil
}
