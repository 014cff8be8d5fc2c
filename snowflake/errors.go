package snowflake

import "errors"

// Sentinel errors. Returned errors may wrap them with detail, so match them
// with errors.Is.
var (
	// ErrInvalidLayout means worker bits outside 1..21, an epoch outside the
	// years 1..9999 or after the clock's now, or a Layout value that NewLayout
	// did not make.
	ErrInvalidLayout = errors.New("invalid snowflake layout")
	// ErrLayoutTooShort means the layout's time bits run out less than 10
	// years from now.
	ErrLayoutTooShort = errors.New("snowflake layout runs out of time within 10 years")
	// ErrInvalidWorkerID means a worker ID outside 0..2^WorkerBits-1.
	ErrInvalidWorkerID = errors.New("worker ID out of range")
	// ErrInvalidSettings means a negative duration or StartAfterMS, or
	// MaxDriftError below MaxDriftBlock.
	ErrInvalidSettings = errors.New("invalid snowflake settings")
	// ErrInvalidID means a negative ID, or parts that do not fit the layout.
	ErrInvalidID = errors.New("invalid snowflake ID")
	// ErrClockDriftTryLater means the clock is behind the last issued
	// timestamp (or the StartAfterMS floor) by more than MaxDriftBlock; the
	// generator is intact and a later call, or another instance, can succeed.
	ErrClockDriftTryLater = errors.New("clock moved backwards: try later")
	// ErrClockDriftTooLargeToRecover means the clock fell behind the last
	// issued timestamp by more than MaxDriftError. The generator has stopped:
	// every later call returns this error, and its holder should give up the
	// worker lease.
	ErrClockDriftTooLargeToRecover = errors.New("clock moved backwards too far: generator stopped")
	// ErrFenced means Settings.Fence refused the ID: the worker lease is not
	// provably held for the timestamp the ID would carry.
	ErrFenced = errors.New("worker lease not provably held")
	// ErrTimeExhausted means the layout's time bits have run out.
	ErrTimeExhausted = errors.New("snowflake time bits exhausted")
)
