package snowflake

import "time"

// Observer receives a Generator's events, for metrics (Settings.Observer).
// The generator reports every call, so a count is the same whichever front
// end served the IDs. Methods must be cheap, must not allocate, must be
// safe for concurrent use and must not call the Generator.
type Observer interface {
	// Issued reports n IDs issued by one successful call: 1 for Next,
	// len(dst) for NextN. It is called after the generator's lock is
	// released. A call that fails reports nothing here, even the IDs a
	// failed NextN used up.
	Issued(n int)
	// Drift reports a clock found behind by behind, and what came of it:
	// DriftWaited for each wait, DriftTryLater and DriftTooLarge for each
	// call refused with ErrClockDriftTryLater or
	// ErrClockDriftTooLargeToRecover (the latter on every call after the
	// generator stopped, with the drift that stopped it). It is called with
	// the generator's lock held.
	Drift(outcome DriftOutcome, behind time.Duration)
}

// DriftOutcome is what a clock drift came to; its value is the name a
// metric label uses.
type DriftOutcome string

// The outcomes of a clock drift, by the tiers of Settings.MaxDriftBlock and
// Settings.MaxDriftError.
const (
	// DriftWaited: the generator waited until the clock caught up.
	DriftWaited DriftOutcome = "waited"
	// DriftTryLater: the call returned ErrClockDriftTryLater.
	DriftTryLater DriftOutcome = "try_later"
	// DriftTooLarge: the call returned ErrClockDriftTooLargeToRecover.
	DriftTooLarge DriftOutcome = "too_large"
)
