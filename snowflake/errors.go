package snowflake

import "errors"

// Kind says what kind of failure an *Error is: what its caller can do about
// it. Front ends answer by kind, never by matching errors or their text.
//
// The words are shared with packages segment and workerlease: a kind that
// two packages have is spelled the same in both, so a front end maps the
// errors of all three with one table keyed by string(kind).
type Kind string

// Kinds of this package's errors.
const (
	// KindInvalid: bad input; Error.Field names it, Error.Reason says what
	// a valid one is. (HTTP resp_code 1; RESP ERR.)
	KindInvalid Kind = "invalid"
	// KindClockBackwards: this host's clock moved backwards; retry later or
	// on another instance. (resp_code 4; RESP TRYAGAIN.)
	KindClockBackwards Kind = "clock_backwards"
	// KindUnavailable: the worker lease is not provably held right now;
	// retry. (resp_code 3; RESP TRYAGAIN.)
	KindUnavailable Kind = "unavailable"
)

// Error is a failure with its meaning: a Kind for the front ends and the
// words a user reads, which every front end sends unchanged. The sentinels
// that can reach a client are *Error values; errors wrapping them with
// detail (fmt.Errorf with %w) keep their Kind and words for Describe and
// match them with errors.Is. Errors that are not *Error (an invalid layout
// or settings, found at start) are for the operator's log.
type Error struct {
	Kind Kind
	// Field names the input at fault as the API names it ("id"). Set for
	// KindInvalid only.
	Field string
	// Reason says what is wrong: for a Field, what a valid value is;
	// otherwise the whole message.
	Reason string
}

// Error is the message a user reads: "invalid <Field>: <Reason>" for an
// input, else Reason. It never holds the offending value.
func (e *Error) Error() string {
	if e.Field != "" {
		return "invalid " + e.Field + ": " + e.Reason
	}
	return e.Reason
}

// Describe returns the Kind and message of the first *Error in err's tree.
// ok is false when there is none: err is then a fault whose text is not for
// clients, and a front end answers it as an internal error.
func Describe(err error) (kind Kind, msg string, ok bool) {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return "", "", false
	}
	return e.Kind, e.Error(), true
}

// Sentinel errors. Returned errors may wrap them with detail, so match them
// with errors.Is.
var (
	// ErrInvalidID means a negative ID, or parts that do not fit the layout.
	ErrInvalidID = &Error{Kind: KindInvalid, Field: "id", Reason: "want a non-negative 64-bit snowflake ID"}
	// ErrClockDriftTryLater means the clock is behind the last issued
	// timestamp (or the StartAfterMS floor) by more than MaxDriftBlock; the
	// generator is intact and a later call, or another instance, can succeed.
	ErrClockDriftTryLater = &Error{Kind: KindClockBackwards, Reason: "clock moved backwards: retry later or on another instance"}
	// ErrClockDriftTooLargeToRecover means the clock fell behind the last
	// issued timestamp by more than MaxDriftError. The generator has stopped:
	// every later call returns this error, and its holder should give up the
	// worker lease. Its Kind is KindClockBackwards, like a short drift's: the
	// cause is this host's clock and the remedy another instance.
	ErrClockDriftTooLargeToRecover = &Error{Kind: KindClockBackwards, Reason: "clock moved backwards too far: snowflake stopped on this instance, use another instance"}
	// ErrFenced means Settings.Fence refused the ID: the worker lease is not
	// provably held for the timestamp the ID would carry.
	ErrFenced = &Error{Kind: KindUnavailable, Reason: "worker lease not confirmed: retry"}

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
	// ErrTimeExhausted means the layout's time bits have run out. It is not
	// an *Error: the contract has no answer for it but an internal error,
	// for the operator to see in the log.
	ErrTimeExhausted = errors.New("snowflake time bits exhausted")
)
