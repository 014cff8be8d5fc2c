// Package errs is idalloc's one error vocabulary: what went wrong, in a
// form every front end answers and every program can branch on, in the
// mould of upspin's errors.E and Ben Johnson's wtf.Error. The domain
// packages (segment, snowflake, workerlease) make their refusals as *Error
// values with a Kind, the field at fault and the words a user reads; each
// front end maps a Kind to its wire in one table (an HTTP resp_code and
// status, a RESP error class) and sends the words unchanged. The kinds are
// the contract's (docs/api.md §2), so the HTTP envelope's "kind" is Kind as it
// is.
//
// It imports nothing of idalloc's, so every package may import it.
package errs

import "errors"

// Kind says what kind of failure an *Error is: what its caller can do
// about it.
type Kind string

// The kinds of docs/api.md §2.
const (
	// BadRequest: bad input; Error.Field names it. Retrying the same input
	// cannot succeed.
	BadRequest Kind = "bad_request"
	// UnknownTag: no such app_tag.
	UnknownTag Kind = "unknown_tag"
	// UnknownRoute: no such route or command.
	UnknownRoute Kind = "unknown_route"
	// Unavailable: retry, later or on another instance (a store
	// unreachable with nothing buffered, a lease not confirmed).
	Unavailable Kind = "unavailable"
	// Draining: this instance is stopping; retry on another.
	Draining Kind = "draining"
	// ClockBackwards: the snowflake clock moved backwards; retry later or
	// on another instance.
	ClockBackwards Kind = "clock_backwards"
	// NoWorkerID: every worker ID of the cluster is held.
	NoWorkerID Kind = "no_worker_id"
	// TokenMismatch: the worker ID is held by another token.
	TokenMismatch Kind = "token_mismatch"
	// LeaseExpired: this token's lease expired.
	LeaseExpired Kind = "lease_expired"
	// NotAssigned: the worker ID is not held (released, never granted, or
	// forgotten by its store).
	NotAssigned Kind = "not_assigned"
	// Unauthorized: an admin call without the admin token.
	Unauthorized Kind = "unauthorized"
	// Forbidden: a token not allowed this tag.
	Forbidden Kind = "forbidden"
	// Internal: a fault whose text is for logs, not clients.
	Internal Kind = "internal"
	// MethodNotAllowed: the route exists, the method does not.
	MethodNotAllowed Kind = "method_not_allowed"
	// Exists: the app_tag is there already.
	Exists Kind = "exists"
	// Exhausted: the tag's ID space is used up.
	Exhausted Kind = "exhausted"
	// PeriodExhausted: a dated tag's period is used up; retry in the next.
	PeriodExhausted Kind = "period_exhausted"
)

// Kinds lists every Kind, for front ends' tests that map each one.
func Kinds() []Kind {
	return []Kind{BadRequest, UnknownTag, UnknownRoute, Unavailable, Draining, ClockBackwards,
		NoWorkerID, TokenMismatch, LeaseExpired, NotAssigned, Unauthorized, Forbidden, Internal,
		MethodNotAllowed, Exists, Exhausted, PeriodExhausted}
}

// Error is a failure with its meaning. Its message holds no text the
// caller sent (a tag, a description, a token), at most a number out of
// range ("step 0 is below 1"), so it is safe to send and to log whatever
// the input was.
// A sentinel is an *Error; an error made for one call (a step refused with
// the configured cap in its words) is a case of its sentinel (E's of), so
// errors.Is matches it. Errors that are not *Error are faults.
type Error struct {
	Kind Kind
	// Field names the input at fault as the API names it ("app_tag",
	// "step", "token", …), or "" when none is.
	Field string
	// Reason says what is wrong: for a BadRequest with a Field, what a
	// valid value is ("must be from 1 to 1000000"); otherwise the whole
	// message.
	Reason string
	of     error
}

// E returns an error of kind about field ("" for none) in reason's words,
// a case of of (nil for none).
func E(kind Kind, field, reason string, of error) *Error {
	return &Error{Kind: kind, Field: field, Reason: reason, of: of}
}

// Error is the message a user reads: "invalid <Field>: <Reason>" for a
// BadRequest naming a field, else Reason.
func (e *Error) Error() string {
	if e.Kind == BadRequest && e.Field != "" {
		return "invalid " + e.Field + ": " + e.Reason
	}
	return e.Reason
}

// Unwrap returns the error e is a case of, or nil.
func (e *Error) Unwrap() error { return e.of }

// Describe returns the first *Error in err's tree, or false when there is
// none: err is then a fault, answered as Internal.
func Describe(err error) (*Error, bool) {
	return errors.AsType[*Error](err)
}

// KindOf returns the Kind of the first *Error in err's tree, or Internal.
func KindOf(err error) Kind {
	if e, ok := Describe(err); ok {
		return e.Kind
	}
	return Internal
}
