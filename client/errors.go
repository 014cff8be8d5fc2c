package client

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/workerlease"
)

// Sentinel errors of the client itself; match them with errors.Is.
var (
	// ErrClosed: the Client (or Keeper) was closed.
	ErrClosed = errors.New("idalloc client closed")
	// ErrUnavailable: no instance answered in one pass over every URL: each
	// refused the connection, timed out, closed it unanswered, answered 503
	// (resp_code 3, or 4 for snowflake) or 500, or answered something that
	// is not idalloc's JSON. The error also wraps the last instance's error.
	// Retrying later may succeed.
	ErrUnavailable = errors.New("no idalloc instance could answer")
	// ErrInvalidConfig: a Config or KeeperConfig field out of range; the
	// error names it.
	ErrInvalidConfig = errors.New("invalid idalloc client config")
	// ErrBadRequest: resp_code 1 (or 9) for a reason with no sentinel of
	// its own; the message names the parameter.
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthorized: resp_code 7, a lease call without the right admin
	// token (Config.AdminToken), or an ID call without a valid per-tag
	// token (Config.Token) on a server with alloc_auth on.
	ErrUnauthorized = errors.New("missing or wrong token")
	// ErrInternal: resp_code 8, logged by the server with the request ID the
	// message carries. Another instance is tried first.
	ErrInternal = errors.New("idalloc internal error")
	// ErrLeaseLost: a Keeper could no longer prove that it holds its lease
	// (Keeper.Err wraps the last renewal's error with it).
	ErrLeaseLost = errors.New("worker lease lost")
)

// Sentinels shared with the domain packages: errors.Is matches either name,
// and each says the words the server sends. The tag sentinels are the
// allocator's (segment, segment/dated) and the access guard's by kind,
// field and words (domainError), since the client imports neither; the
// lease sentinels are workerlease's values and carry the names of the
// workerid library (libx.net/workerid).
var (
	// ErrInvalidTag: a tag outside ^[A-Za-z0-9_.:-]{1,64}$; refused before
	// any request.
	ErrInvalidTag error = sameAs(errs.BadRequest, "app_tag", "must match ^[A-Za-z0-9_.:-]{1,64}$")
	// ErrUnknownTag: resp_code 2, no such app_tag (create it with POST /tags).
	ErrUnknownTag error = sameAs(errs.UnknownTag, "app_tag", "unknown app_tag: create it first (POST /tags, or HSET over RESP)")
	// ErrExhausted: resp_code 10 on /alloc, the tag's ID space is used up.
	ErrExhausted error = sameAs(errs.Exhausted, "app_tag", "app_tag ID space exhausted")
	// ErrPeriodExhausted: resp_code 10 of kind period_exhausted on /alloc,
	// a dated tag's current period has no number left (docs/api.md §11); the
	// *Error's RetryAfter says when the next one begins.
	ErrPeriodExhausted error = sameAs(errs.PeriodExhausted, "app_tag", "this period's numbers are all issued: "+
		"retry when the next period begins, or create a tag with a longer length")
	// ErrForbidden: resp_code 7 of kind forbidden, an ID call whose
	// Config.Token is not allowed the tag (docs/api.md §12). It is also
	// ErrUnauthorized.
	ErrForbidden error = sameAs(errs.Forbidden, "token", "this token is not allowed this app_tag")
	// ErrTextOnly: Next or NextN on a tag whose IDs are text (a dated tag
	// with a prefix or a separator); NextText and NextTextN serve them. No
	// ID is used up by the refusal.
	ErrTextOnly error = sameAs(errs.BadRequest, "app_tag", "this tag's IDs are text, not numbers (a dated tag with a prefix or a separator): "+
		"ask for them as text (id_str; NextText in Go)")
	// ErrBatchTooLarge: resp_code 1 naming count with "left": the instance
	// has fewer IDs of the tag left than a fetch asked for (a bounded
	// format's end, or a dated tag's period's), and took none; the
	// *Error's Left says how many it has. The fetch asks again at once for
	// that many, so a caller sees it only from an instance that refuses a
	// count it says it has.
	ErrBatchTooLarge error = sameAs(errs.BadRequest, "count", "more than this tag has left on this instance")

	// ErrNoAvailableID: resp_code 5, every worker ID of the cluster is held.
	ErrNoAvailableID error = workerlease.ErrNoWorkerID
	// ErrInvalidWorkerID: resp_code 1 naming worker_id (out of range).
	ErrInvalidWorkerID error = workerlease.ErrInvalidWorkerID
	// ErrInvalidToken: resp_code 1 naming token (not 22 base64url characters).
	ErrInvalidToken error = workerlease.ErrInvalidToken
	// ErrTokenMismatch: resp_code 6, the worker ID is held by another token.
	// It is also what a resp_code 6 whose words this client does not know
	// unwraps to: the general "this token does not hold the worker ID".
	ErrTokenMismatch error = workerlease.ErrTokenMismatch
	// ErrTokenExpired: resp_code 6, this token's lease expired.
	ErrTokenExpired error = workerlease.ErrLeaseExpired
	// ErrNotAssigned: resp_code 6, the worker ID is not held (never, or
	// released).
	ErrNotAssigned error = workerlease.ErrNotAssigned
)

// domainError is a sentinel of a domain package the client does not import,
// by its kind, field and words: errors.Is matches the domain's own
// sentinel, and errs.KindOf reads its kind.
type domainError struct{ e *errs.Error }

func sameAs(kind errs.Kind, field, reason string) *domainError {
	return &domainError{errs.E(kind, field, reason, nil)}
}

func (d *domainError) Error() string { return d.e.Error() }

// Unwrap returns the *errs.Error of d's kind, field and words.
func (d *domainError) Unwrap() error { return d.e }

// Is reports whether target is the domain's sentinel of d's kind, field
// and words.
func (d *domainError) Is(target error) bool {
	t, ok := target.(*errs.Error)
	return ok && t.Kind == d.e.Kind && t.Field == d.e.Field && t.Reason == d.e.Reason
}

// Error is an idalloc instance's answer that is not a success: its
// resp_code, HTTP status and message, in the server's words. It unwraps to
// the sentinel of its resp_code (see codeErrors), so errors.Is(err,
// ErrUnknownTag) and the like work.
type Error struct {
	RespCode   int
	HTTPStatus int
	// Msg is the server's msg: what is wrong, in words a user can act on.
	Msg string
	// URL is the base URL of the instance that answered.
	URL string
	// RetryAfter is the answer's Retry-After (when to try again: a 503's,
	// or when a spent period's next one begins), 0 when it has none.
	RetryAfter time.Duration
	// Left is the answer's "left": of a count refused as more than the
	// tag has left on the instance (ErrBatchTooLarge), how many it has; 0
	// otherwise.
	Left int64

	sentinel error
	field    string // the answer's field: which input it refused
}

// Error returns the server's message with where it came from.
func (e *Error) Error() string {
	return "idalloc at " + e.URL + ": " + e.Msg + " (resp_code " + strconv.Itoa(e.RespCode) + ")"
}

// Unwrap returns the sentinel of e's resp_code.
func (e *Error) Unwrap() error { return e.sentinel }

// codeErrors is the one table from resp_code (docs/api.md §2) to sentinel;
// refine narrows codes 1 and 6 by kind and field.
var codeErrors = map[int]error{
	1:  ErrBadRequest,
	2:  ErrUnknownTag,
	3:  ErrUnavailable,
	4:  ErrUnavailable, // snowflake clock moved backwards: another instance may serve
	5:  ErrNoAvailableID,
	6:  ErrTokenMismatch,
	7:  ErrUnauthorized,
	8:  ErrInternal,
	9:  ErrBadRequest,
	10: ErrExhausted,
}

// answerError is a non-zero answer's envelope: resp_code, msg, and the
// kind and field every error carries (docs/api.md §2), and left, which a count
// refused as more than the tag has left carries.
type answerError struct {
	code        int
	msg         string
	kind, field string
	left        int64
}

// newError builds the *Error of a non-zero answer.
func newError(url string, status int, a answerError) *Error {
	return &Error{RespCode: a.code, HTTPStatus: status, Msg: a.msg, URL: url, sentinel: refine(a), field: a.field, Left: a.left}
}

// retryAfterHeader reads a Retry-After (seconds or an HTTP date) as it
// is; 0 when absent or unreadable.
func retryAfterHeader(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 32); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// refine narrows a resp_code by the answer's kind and field, never by its
// words: resp_code 6 is three kinds, and resp_code 1 names its field.
func refine(a answerError) error {
	switch errs.Kind(a.kind) {
	case errs.TokenMismatch:
		return ErrTokenMismatch
	case errs.LeaseExpired:
		return ErrTokenExpired
	case errs.NotAssigned:
		return ErrNotAssigned
	case errs.PeriodExhausted:
		return ErrPeriodExhausted
	case errs.Forbidden:
		return forbidden
	case errs.BadRequest:
		switch a.field {
		case "worker_id":
			return workerlease.ErrInvalidWorkerID
		case "token":
			return workerlease.ErrInvalidToken
		case "app_tag":
			return ErrInvalidTag
		case "count":
			if a.left > 0 {
				return ErrBatchTooLarge
			}
		}
	}
	if s, ok := codeErrors[a.code]; ok {
		return s
	}
	return ErrInternal // a code this client does not know
}

// forbidden is ErrForbidden that is also ErrUnauthorized, resp_code 7's
// sentinel: a caller that tells only "not allowed" apart still does.
var forbidden = errors.Join(ErrForbidden, ErrUnauthorized)

// retryElsewhere reports whether an answer is the instance's own trouble, so
// that another instance may serve the same request: unavailable (draining,
// store down), clock drift, internal error.
func retryElsewhere(code int) bool { return code == 3 || code == 4 || code == 8 }
