package segment

import (
	"errors"
	"strconv"
)

// Kind says what kind of failure an *Error is: what its caller can do about
// it. Front ends answer by kind, never by matching errors or their text: HTTP
// maps each kind to a resp_code and status, RESP to an error class, and both
// send Error's message as it is.
//
// The words are shared with packages workerlease and snowflake: a kind
// that two packages have is spelled the same in both, so a front end maps
// the errors of all three with one table keyed by string(kind).
type Kind string

// Kinds of this package's errors.
const (
	// KindInvalid: bad input; Error.Field names it, Error.Reason says what
	// a valid one is. Retrying the same input cannot succeed. (HTTP
	// resp_code 1; RESP ERR.)
	KindInvalid Kind = "invalid"
	// KindNotFound: no such tag. (resp_code 2; ERR.)
	KindNotFound Kind = "not_found"
	// KindExists: the tag is there already. (resp_code 10; ERR.)
	KindExists Kind = "exists"
	// KindExhausted: the tag's ID space is used up. (resp_code 10; ERR.)
	KindExhausted Kind = "exhausted"
	// KindUnavailable: retry, later or on another instance: the store is
	// unreachable or slow and nothing is buffered, or this instance is
	// draining. (resp_code 3; RESP TRYAGAIN.)
	KindUnavailable Kind = "unavailable"
)

// Error is a failure with its meaning: a Kind for the front ends and the
// words a user reads, which every front end sends unchanged. The sentinels
// below are *Error values; an error made for one call (a step refused with
// the configured cap in its words) unwraps to its sentinel, so errors.Is
// matches it. Errors that are not *Error (a store fault, ErrRewound) are
// faults whose text is for logs, never for clients.
type Error struct {
	Kind Kind
	// Field names the input at fault as the API names it: "app_tag",
	// "step", "format", "length", "start", "description". Set for
	// KindInvalid only.
	Field string
	// Reason says what is wrong: for a Field, what a valid value is ("must
	// be from 1 to 1000000"); otherwise the whole message.
	Reason string
	// sentinel is what this error is a case of, for errors.Is; nil for the
	// sentinels themselves.
	sentinel error
}

// Error is the message a user reads: "invalid <Field>: <Reason>" for an
// input, else Reason. It never holds the offending value, so it is safe to
// send and to log whatever the input was.
func (e *Error) Error() string {
	if e.Field != "" {
		return "invalid " + e.Field + ": " + e.Reason
	}
	return e.Reason
}

// Unwrap returns the sentinel e is a case of, or nil.
func (e *Error) Unwrap() error { return e.sentinel }

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

func invalid(field, reason string, sentinel error) *Error {
	return &Error{Kind: KindInvalid, Field: field, Reason: reason, sentinel: sentinel}
}

// Sentinel errors; callers match them with errors.Is. Those that are *Error
// carry the words every front end answers with.
var (
	// ErrInvalidTag: the app_tag does not match ^[A-Za-z0-9_.:-]{1,64}$.
	ErrInvalidTag = invalid("app_tag", "must match ^[A-Za-z0-9_.:-]{1,64}$", nil)
	// ErrInvalidStep: CreateTag with a step below 1 or above the configured
	// cap, or a start out of range (ErrInvalidStart). The Allocator's own
	// error names its cap: "invalid step: must be from 1 to 1000000".
	ErrInvalidStep = invalid("step", "must be from 1 to the configured maximum (segment.max_step)", nil)
	// ErrInvalidStart: CreateTag with a start below 1 or above MaxUsableID.
	// It is also ErrInvalidStep.
	ErrInvalidStart = invalid("start", "must be from 1 to "+strconv.FormatInt(MaxUsableID, 10), ErrInvalidStep)
	// ErrInvalidDescription: CreateTag with a description longer than
	// MaxDescription characters, or one that is not text
	// (ErrDescriptionNotText).
	ErrInvalidDescription = invalid("description", "longer than "+strconv.Itoa(MaxDescription)+" characters", nil)
	// ErrDescriptionNotText: CreateTag with a description that is not
	// UTF-8 or holds a control character (unicode.IsControl: NUL, tab,
	// CR, LF, DEL, …). It is also ErrInvalidDescription. A front end
	// whose decoder mends such input without a word (encoding/json makes
	// U+FFFD of bytes that are not UTF-8) answers it itself when what it
	// was sent was not text.
	ErrDescriptionNotText = invalid("description", "must be UTF-8 text without control characters (NUL, tab, line breaks)", ErrInvalidDescription)
	// ErrUnknownTag: no such tag in the store.
	ErrUnknownTag = &Error{Kind: KindNotFound, Reason: "unknown app_tag: create it first (POST /tags, or HSET over RESP)"}
	// ErrTagExists: CreateTag for a tag that is already there.
	ErrTagExists = &Error{Kind: KindExists, Reason: "app_tag already exists"}
	// ErrExhausted: the tag's ID space (up to MaxUsableID) is used up.
	ErrExhausted = &Error{Kind: KindExhausted, Reason: "app_tag ID space exhausted"}
	// ErrUnavailable: the IDs asked for are not buffered and the store did
	// not deliver in time (or a store call failed).
	ErrUnavailable = &Error{Kind: KindUnavailable, Reason: "unavailable: the store is unreachable or too slow; retry (IDs already buffered are still served)"}
	// ErrClosed: the allocator is closed (draining).
	ErrClosed = &Error{Kind: KindUnavailable, Reason: "draining: retry on another instance"}

	// ErrRewound: the store handed out a range that does not start above
	// every range this allocator already received for the tag, as a primary
	// rewound by a failover would (its last max_id updates lost). Nothing is
	// issued from such a range; the fetch is retried as after a fault.
	ErrRewound = errors.New("the store handed out a range at or below one this instance already received (was the database rewound by a failover?); refusing it")
	// ErrInvalidConfig: a negative Config field.
	ErrInvalidConfig = errors.New("invalid segment config")
)
