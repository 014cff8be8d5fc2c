package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// Response codes of the contract's table (docs/api.md §2).
const (
	codeOK               = 0
	codeBadRequest       = 1
	codeUnknownTag       = 2
	codeUnavailable      = 3
	codeClockDrift       = 4
	codeNoWorkerID       = 5
	codeLeaseConflict    = 6
	codeUnauthorized     = 7
	codeInternal         = 8
	codeMethodNotAllowed = 9
	codeConflict         = 10
)

// Errors the server itself raises, answered from ownErrors.
var (
	errNotFound         = errors.New("unknown route")
	errMethodNotAllowed = errors.New("method not allowed")
	errUnauthorized     = errors.New("missing or wrong admin token")
	errLoopbackOnly     = errors.New("admin call from a non-loopback client")
	errForeignHost      = errors.New("admin call with a non-loopback Host")
	errCrossOrigin      = errors.New("admin call with another Origin")
	errCrossSite        = errors.New("admin call marked cross-site by Sec-Fetch-Site")
	errNoLeases         = errors.New("worker-ID leases disabled")
)

// answer is how one error is told to the client: the contract's resp_code
// and status for its kind, the kind itself and the field at fault (docs/api.md
// §2), and the words.
type answer struct {
	code   int
	status int
	kind   errs.Kind
	field  string
	msg    string
	// retryAfter is the Retry-After, in seconds, of an answer whose error
	// says when to retry; 0 for none (a 503 then gets send's).
	retryAfter int64
	// left is what a batch refused as larger than its tag has left
	// (segment.TooLargeError) may ask for instead, sent as "left" so that
	// a client reads it without reading words; 0 for none.
	left int64
}

// retryAfterError is an error that says when to retry
// (dated.ExhaustedError, workerlease.WaitError).
type retryAfterError interface {
	error
	RetryAfterSeconds() int64
}

// kindTable is the one place that says which resp_code and HTTP status
// each kind of the vocabulary (package errs) gets; the message is the
// error's own. A kind missing here is answered as internal;
// TestKindTable holds it to errs.Kinds.
var kindTable = map[errs.Kind]struct{ code, status int }{
	errs.BadRequest:       {codeBadRequest, http.StatusBadRequest},
	errs.UnknownTag:       {codeUnknownTag, http.StatusNotFound},
	errs.UnknownRoute:     {codeUnknownTag, http.StatusNotFound},
	errs.Unavailable:      {codeUnavailable, http.StatusServiceUnavailable},
	errs.Draining:         {codeUnavailable, http.StatusServiceUnavailable},
	errs.ClockBackwards:   {codeClockDrift, http.StatusServiceUnavailable},
	errs.NoWorkerID:       {codeNoWorkerID, http.StatusConflict},
	errs.TokenMismatch:    {codeLeaseConflict, http.StatusConflict},
	errs.LeaseExpired:     {codeLeaseConflict, http.StatusConflict},
	errs.NotAssigned:      {codeLeaseConflict, http.StatusConflict},
	errs.Unauthorized:     {codeUnauthorized, http.StatusUnauthorized},
	errs.Forbidden:        {codeUnauthorized, http.StatusForbidden},
	errs.Internal:         {codeInternal, http.StatusInternalServerError},
	errs.MethodNotAllowed: {codeMethodNotAllowed, http.StatusMethodNotAllowed},
	errs.Exists:           {codeConflict, http.StatusConflict},
	errs.Exhausted:        {codeConflict, http.StatusConflict},
	// A dated tag's period used up (docs/api.md §11): resp_code 10, which §2's
	// table answers 409, with Retry-After until the next period begins
	// (classify). Not a 503: another instance shares the period's counter,
	// so a client must wait for the next period, not fail over.
	errs.PeriodExhausted: {codeConflict, http.StatusConflict},
}

// ownErrors are the errors only this front end raises (routes, admin
// rules, modes switched off), with their answers. Anything that is neither
// a domain error, one of these nor a paramError is an internal error: its
// text may carry internals and is only logged.
var ownErrors = []struct {
	err error
	answer
}{
	{errNotFound, own(errs.UnknownRoute, "unknown route")},
	{errMethodNotAllowed, own(errs.MethodNotAllowed, "method not allowed: see the Allow header")},
	{errUnauthorized, own(errs.Unauthorized, "missing or wrong admin token: send Authorization: Bearer <admin_token>")},
	{errLoopbackOnly, own(errs.Unauthorized, "admin calls are served to loopback clients only: configure admin_token")},
	// The three below say which header and what to do; none echoes the
	// header's value, which the client already knows.
	{errForeignHost, own(errs.Unauthorized, "admin call refused: its Host is not a loopback name; address this service as localhost, 127.0.0.1 or [::1], or configure admin_token")},
	{errCrossOrigin, own(errs.Unauthorized, "admin call refused: cross-origin request (its Origin header names another site); make admin calls from curl or a server-side client, not from a web page")},
	{errCrossSite, own(errs.Unauthorized, "admin call refused: cross-site request (Sec-Fetch-Site); make admin calls from curl or a server-side client, not from a web page")},
	{errNoLeases, own(errs.NoWorkerID, "worker-ID leases are not enabled on this instance")},
	{errNoTokens, own(errs.UnknownRoute, "per-tag tokens and the audit log are not served by this instance")},
}

// own is the answer of kind in msg's words.
func own(kind errs.Kind, msg string) answer {
	a := kindTable[kind]
	return answer{code: a.code, status: a.status, kind: kind, msg: msg}
}

var internalAnswer = own(errs.Internal, "internal error")

// atCapAnswer is what a new connection is told, before any request, when
// max_conns are open and none is idle or incomplete to close for it
// (atCapRefusal).
var atCapAnswer = own(errs.Unavailable, "too many connections: max_conns are open, each in a request; retry shortly, on another instance if you have one")

// paramError is a request this front end cannot read: a parameter or body
// field absent, of the wrong JSON type, badly escaped, or a body that is not
// a JSON object. The domain never sees such a request, so the words are the
// server's; what the domain refuses (a tag, step or token out of its rules)
// comes back as the domain's *Error instead. Its message is built from our
// own words and the field's name only, never from the offending value.
type paramError struct {
	field, msg string
}

func (e *paramError) Error() string { return e.msg }

func badParam(field, why string) error { return &paramError{field, "invalid " + field + ": " + why} }

func missingParam(field string) error { return &paramError{field, "missing " + field} }

// classify finds err's answer: a wire-format error (paramError) is a bad
// request in its own words; a domain error is answered by its Kind, with
// its message; then the server's own errors; anything else is internal.
func classify(err error) answer {
	if pe, ok := errors.AsType[*paramError](err); ok {
		return answer{code: codeBadRequest, status: http.StatusBadRequest, kind: errs.BadRequest, field: pe.field, msg: pe.msg}
	}
	if e, ok := errs.Describe(err); ok {
		if a, ok := kindTable[e.Kind]; ok && e.Kind != errs.Internal {
			ans := answer{code: a.code, status: a.status, kind: e.Kind, field: e.Field, msg: e.Error()}
			if e.Kind == errs.PeriodExhausted {
				// Retry-After even for the bare sentinel, which no
				// allocator returns.
				ans.retryAfter = 1
			}
			// An error that knows when to retry says it in Retry-After:
			// the seconds to the next period, or a worker lease's wait.
			if ra, ok := errors.AsType[retryAfterError](err); ok {
				ans.retryAfter = ra.RetryAfterSeconds()
			}
			if tl, ok := errors.AsType[*segment.TooLargeError](err); ok {
				ans.left = tl.Left
			}
			return ans
		}
		return internalAnswer
	}
	for _, e := range ownErrors {
		if errors.Is(err, e.err) {
			return e.answer
		}
	}
	return internalAnswer
}

// appendTo appends a's envelope to b, open for more fields:
// {"resp_code":N,"msg":"…","kind":"…", "field" when there is one and
// "left" when there is one.
func (a answer) appendTo(b []byte) []byte {
	b = append(b, `{"resp_code":`...)
	b = strconv.AppendInt(b, int64(a.code), 10)
	b = append(b, `,"msg":`...)
	b = appendString(b, a.msg)
	b = append(b, `,"kind":`...)
	b = appendString(b, string(a.kind))
	if a.field != "" {
		b = append(b, `,"field":`...)
		b = appendString(b, a.field)
	}
	if a.left > 0 {
		b = append(b, `,"left":`...)
		b = strconv.AppendInt(b, a.left, 10)
	}
	return b
}

// fail answers err in the JSON envelope (classifyFor says what every
// error answer carries besides).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) int {
	return s.failWith(w, r, err, "")
}

// failWith is fail with a "status" field, for /health.
func (s *Server) failWith(w http.ResponseWriter, r *http.Request, err error, status string) int {
	a, rid := s.classifyFor(w, r, err)
	bp := getBuf()
	b := a.appendTo(*bp)
	if status != "" {
		b = append(b, `,"status":`...)
		b = appendString(b, status)
	}
	if a.code == codeInternal {
		b = append(b, `,"request_id":`...)
		b = appendString(b, rid)
	}
	*bp = append(b, '}')
	return sendPooled(w, a.status, bp)
}

// classifyFor is what every wire's error answer starts with, whatever its
// body: err's answer, the request ID, set as X-Request-Id, the Retry-After
// of an error that says when to retry (send sets 1 on other 503s), and an internal error
// logged with the request ID the client sees, so an operator can find the
// real cause.
func (s *Server) classifyFor(w http.ResponseWriter, r *http.Request, err error) (answer, string) {
	a := classify(err)
	rid := s.requestID(r)
	w.Header()[requestIDHeader] = []string{rid}
	if a.retryAfter > 0 {
		w.Header()["Retry-After"] = []string{strconv.FormatInt(a.retryAfter, 10)}
	}
	if a.code == codeInternal {
		s.log.Error("request failed", "err", err, "request_id", rid, "method", r.Method, "path", r.URL.Path)
	}
	return a, rid
}
