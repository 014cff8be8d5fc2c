package snowflake

import (
	"errors"

	"github.com/idalloc/idalloc/errs"
)

// Every refusal of this package is an *errs.Error: a Kind from idalloc's
// one vocabulary, the field at fault, and the words a user reads, which
// every front end sends unchanged (package errs).

// Sentinel errors. Returned errors may wrap them with detail, so match them
// with errors.Is.
var (
	// ErrInvalidID means a negative ID, or parts that do not fit the layout.
	ErrInvalidID = errs.E(errs.BadRequest, "id", "want a non-negative 64-bit snowflake ID", nil)
	// ErrClockDriftTryLater means the clock is behind the last issued
	// timestamp (or the StartAfterMS floor) by more than MaxDriftBlock; the
	// generator is intact and a later call, or another instance, can succeed.
	ErrClockDriftTryLater = errs.E(errs.ClockBackwards, "", "clock moved backwards: retry later or on another instance", nil)
	// ErrClockDriftTooLargeToRecover means the clock fell behind the last
	// issued timestamp by more than MaxDriftError. The generator has stopped:
	// every later call returns this error, and its holder should give up the
	// worker lease. Its Kind is errs.ClockBackwards, like a short drift's: the
	// cause is this host's clock and the remedy another instance.
	ErrClockDriftTooLargeToRecover = errs.E(errs.ClockBackwards, "", "clock moved backwards too far: snowflake stopped on this instance, use another instance", nil)
	// ErrFenced means Settings.Fence refused the ID: the worker lease is not
	// provably held for the timestamp the ID would carry.
	ErrFenced = errs.E(errs.Unavailable, "", "worker lease not confirmed: retry", nil)
	// ErrDisabled means this instance serves no snowflake IDs
	// (snowflake.enabled is false). Its Kind is NoWorkerID, as for an
	// instance that holds no worker ID: another instance may serve.
	ErrDisabled = errs.E(errs.NoWorkerID, "", "snowflake mode is not enabled on this instance", nil)
	// ErrLayoutMismatch means a cluster's recorded layout (epoch, worker
	// bits) differs from this holder's: two layouts in one cluster can
	// compose the same ID from different parts, and a later epoch repeats
	// earlier IDs. Every lease store's CheckLayout refuses with it
	// (leased.LayoutRecorder); it stops an instance's start, or holds back
	// its next lease, so no front end answers with it today. Its Kind is
	// Unavailable because that is what a client meets meanwhile (no lease,
	// so ErrFenced's answer) and what it can do: retry later, or on an
	// instance of the cluster's layout. Not Internal: nothing is broken
	// that a request could report, only this instance's configuration.
	ErrLayoutMismatch = errs.E(errs.Unavailable, "", "snowflake layout differs from the cluster's", nil)

	// ErrInvalidLayout means worker bits outside 1..21, an epoch outside the
	// years 1..9999 or after the clock's now, or a Layout value that NewLayout
	// did not make.
	ErrInvalidLayout = errors.New("invalid snowflake layout")
	// ErrLayoutTooShort means the layout's time bits run out less than 10
	// years from now.
	ErrLayoutTooShort = errors.New("snowflake layout runs out of time within 10 years")
	// ErrInvalidWorkerID means a worker ID outside 0..2^WorkerBits-1.
	ErrInvalidWorkerID = errors.New("worker ID out of range")
	// ErrTooManyRegions means more regions than the layout has worker IDs
	// (Layout.RegionWorkerIDs): some region would have none.
	ErrTooManyRegions = errors.New("more regions than snowflake worker IDs: raise snowflake.worker_bits or lower region.count")
	// ErrInvalidSettings means a negative duration or StartAfterMS, or
	// MaxDriftError below MaxDriftBlock.
	ErrInvalidSettings = errors.New("invalid snowflake settings")
	// ErrTimeExhausted means the layout's time bits have run out. It is not
	// an *errs.Error: the contract has no answer for it but an internal error,
	// for the operator to see in the log.
	ErrTimeExhausted = errors.New("snowflake time bits exhausted")
)
