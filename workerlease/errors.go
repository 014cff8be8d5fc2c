// Package workerlease provides worker-ID leases for snowflake generators: a
// lease is granted with a random token and a TTL judged by the store's
// clock, renewed and released by compare-and-set on the token, and fenced:
// once its holder can no longer prove it still holds the lease, it must stop
// issuing IDs. It imports nothing of this module, so a library user takes
// leases from a store of their own (MemoryStore here; SQL, Redis and etcd
// stores in packages of their own) without the server.
//
// Service validates and serves the lease calls of the HTTP API. Session is
// one lease kept alive, shaped like etcd's concurrency.Session: Done closes
// once when the lease can no longer be proven held, Fence is the check
// before each ID, Close releases it with the last timestamp used. Keeper is
// a small supervisor that starts the next Session after a loss. The
// guarantee they build: no ID is issued while the lease may have lapsed,
// and a later holder of the same worker ID issues only IDs above its
// predecessor's, even when its clock is behind. Package leasetest is the
// conformance suite every Store passes.
//
// Errors carry their meaning: every refusal is an *Error with a Kind
// (invalid, no_worker_id, conflict, unavailable) and the message a user
// reads, which names the input at fault and what a valid one is ("invalid
// worker_id: must be from 0 to 1023"). Service checks every input, once;
// front ends parse their wire format, call the Service, and answer an error
// with Describe: the Kind picks their own code or class from one small
// table, the message goes out unchanged. The sentinels match with
// errors.Is.
package workerlease

import "errors"

// Kind says what kind of failure an *Error is: what its caller can do about
// it. Front ends answer by kind, never by matching errors or their text.
//
// The words are shared with packages segment and snowflake: a kind that two
// packages have is spelled the same in both, so a front end maps the errors
// of all three with one table keyed by string(kind).
type Kind string

// Kinds of this package's errors.
const (
	// KindInvalid: bad input; Error.Field names it, Error.Reason says what
	// a valid one is. (HTTP resp_code 1.)
	KindInvalid Kind = "invalid"
	// KindNoWorkerID: every worker ID of the cluster is held. (resp_code 5.)
	KindNoWorkerID Kind = "no_worker_id"
	// KindConflict: the token does not hold the worker ID: another token
	// does, the lease expired, or the ID is not assigned. Renewing cannot
	// help; acquire a new worker ID. (resp_code 6.)
	KindConflict Kind = "conflict"
	// KindUnavailable: the lease store is unreachable; retry. (resp_code 3.)
	KindUnavailable Kind = "unavailable"
)

// Error is a failure with its meaning: a Kind for the front ends and the
// words a user reads, which every front end sends unchanged. The sentinels
// below are *Error values; an error made for one call (a worker ID refused
// with the Service's range in its words) unwraps to its sentinel, so
// errors.Is matches it. Errors that are not *Error are faults whose text is
// for logs, never for clients.
type Error struct {
	Kind Kind
	// Field names the input at fault as the API names it: "cluster",
	// "worker_id", "token", "last_timestamp_ms". Set for KindInvalid only.
	Field string
	// Reason says what is wrong: for a Field, what a valid value is;
	// otherwise the whole message.
	Reason string
	// sentinel is what this error is a case of, for errors.Is; nil for the
	// sentinels themselves.
	sentinel error
}

// Error is the message a user reads: "invalid <Field>: <Reason>" for an
// input, else Reason. It never holds the offending value.
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

// Sentinel errors; match them with errors.Is. Those that are *Error carry
// the words every front end answers with.
var (
	ErrNoWorkerID = &Error{Kind: KindNoWorkerID, Reason: "no worker ID available in the cluster"}
	// ErrInvalidWorkerID: a worker ID outside [0, MaxWorkerID]. The
	// Service's own error names the range: "must be from 0 to 1023".
	ErrInvalidWorkerID  = invalid("worker_id", "out of range", nil)
	ErrInvalidToken     = invalid("token", "want 22 base64url characters", nil)
	ErrInvalidCluster   = invalid("cluster", "want 1 to 64 characters of A-Z a-z 0-9 _ . : -", nil)
	ErrInvalidTimestamp = invalid("last_timestamp_ms", "must be Unix milliseconds, from 0 to a day past this server's clock", nil)
	ErrTokenMismatch    = &Error{Kind: KindConflict, Reason: "worker ID is held by another token"}
	ErrLeaseExpired     = &Error{Kind: KindConflict, Reason: "lease expired: acquire a new worker ID"}
	ErrNotAssigned      = &Error{Kind: KindConflict, Reason: "worker ID is not assigned"}
	// ErrUnavailable wraps a store failure that is none of the outcomes
	// above (the database unreachable, a timeout): retrying may succeed.
	ErrUnavailable = &Error{Kind: KindUnavailable, Reason: "unavailable: the lease store is unreachable; retry"}

	// ErrLayoutMismatch: the cluster's recorded snowflake layout (epoch,
	// worker bits) differs from this instance's.
	ErrLayoutMismatch = errors.New("snowflake layout differs from the cluster's")
	ErrInvalidConfig  = errors.New("invalid workerlease config")
)
