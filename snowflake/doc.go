// Package snowflake generates 64-bit, time-ordered IDs without I/O: the
// pure generator behind idalloc's snowflake mode, in the mould of
// sony/sonyflake.
//
// An ID is laid out, from the most significant bit down, as
//
//	0 | 41 bits: milliseconds since Epoch | WorkerBits: worker ID | 22-WorkerBits: sequence
//
// The default layout (WorkerBits 10, sequence 12 bits) gives 1024 workers,
// 4096 IDs per millisecond per worker, and 2^41 ms (about 69.7 years) from the
// epoch, 2026-01-01T00:00:00Z by default. IDs are positive int64 values, so
// they sort by time and survive every language with signed 64-bit integers.
//
// A JS53 layout (NewJS53Layout) keeps the 41 bits of milliseconds and gives
// the worker ID and sequence 12 bits, not 22, so that every ID is at most
// 2^53-1 and a JavaScript number holds it exactly:
//
//	0 (11 bits) | 41 bits: milliseconds since Epoch | WorkerBits: worker ID | 12-WorkerBits: sequence
//
// By default (WorkerBits 6) that is 64 workers with 64 IDs per millisecond
// each, until the same End as the default layout.
//
// A Generator guarantees that the IDs it issues are unique and strictly
// increasing, provided no other process uses the same worker ID with the same
// layout at the same time; that is what worker-ID leases (package
// workerlease) and Settings.Fence are for. Across holders of one worker ID,
// Settings.StartAfterMS carries the previous holder's highest timestamp so a
// new holder never issues an ID at or below it, even when its clock is behind.
//
// The clock moving backwards is handled in three tiers, judged against the
// highest timestamp the generator has issued: behind by at most MaxDriftBlock,
// Next waits and succeeds; behind by at most MaxDriftError, Next returns
// ErrClockDriftTryLater at once; beyond that it returns
// ErrClockDriftTooLargeToRecover and the generator stops for good, because a
// clock that far off cannot be trusted to fence a lease either.
//
// Time, sleeping and randomness are injected through Settings, so every tier
// can be tested with a fake clock.
//
// Errors a client may see are *errs.Error values with a Kind (bad_request,
// clock_backwards, unavailable) and the message a user reads; errs.Describe
// finds one in any error that wraps it. Front ends answer by Kind from
// one small table of their own and send the message unchanged, so HTTP and
// RESP say the same words.
package snowflake
