package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Response codes of the contract's table (API.md §2).
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
	errNoSnowflake      = errors.New("snowflake disabled")
	errNoLeases         = errors.New("worker-ID leases disabled")
)

// answer is how one kind of error is told to the client.
type answer struct {
	code   int
	status int
	msg    string
}

// kindTable is the contract's answer to each kind of domain error: the
// domain packages (segment, workerlease, snowflake) own the rules and the
// words, and this table only says which resp_code and HTTP status each Kind
// gets; the message is the domain error's own. The packages spell a shared
// kind the same way, so one row serves all three: segment's "invalid" is
// workerlease's and snowflake's too. A Kind missing here would be answered
// as an internal error; TestKindTable lists every package's kinds.
var kindTable = []struct {
	kind         string
	code, status int
}{
	{string(segment.KindInvalid), codeBadRequest, http.StatusBadRequest},
	{string(segment.KindNotFound), codeUnknownTag, http.StatusNotFound},
	{string(segment.KindUnavailable), codeUnavailable, http.StatusServiceUnavailable},
	{string(snowflake.KindClockBackwards), codeClockDrift, http.StatusServiceUnavailable},
	{string(workerlease.KindNoWorkerID), codeNoWorkerID, http.StatusConflict},
	{string(workerlease.KindConflict), codeLeaseConflict, http.StatusConflict},
	{string(segment.KindExists), codeConflict, http.StatusConflict},
	{string(segment.KindExhausted), codeConflict, http.StatusConflict},
}

// describe finds the domain error in err: its Kind, as the shared word, and
// its message. No error the server meets wraps errors of two packages; the
// order follows the handlers' (leased.Source passes snowflake's errors
// on).
func describe(err error) (kind, msg string, ok bool) {
	if k, m, ok := segment.Describe(err); ok {
		return string(k), m, true
	}
	if k, m, ok := snowflake.Describe(err); ok {
		return string(k), m, true
	}
	if k, m, ok := workerlease.Describe(err); ok {
		return string(k), m, true
	}
	return "", "", false
}

// ownErrors are the errors only this front end raises (routes, admin
// rules, modes switched off), with their answers. Anything that is neither
// a domain error, one of these nor a paramError is an internal error: its
// text may carry internals and is only logged.
var ownErrors = []struct {
	err error
	answer
}{
	{errNotFound, answer{codeUnknownTag, http.StatusNotFound, "unknown route"}},
	{errMethodNotAllowed, answer{codeMethodNotAllowed, http.StatusMethodNotAllowed, "method not allowed: see the Allow header"}},
	{errUnauthorized, answer{codeUnauthorized, http.StatusUnauthorized, "missing or wrong admin token: send Authorization: Bearer <admin_token>"}},
	{errLoopbackOnly, answer{codeUnauthorized, http.StatusUnauthorized, "admin calls are served to loopback clients only: configure admin_token"}},
	// The three below say which header and what to do; none echoes the
	// header's value, which the client already knows.
	{errForeignHost, answer{codeUnauthorized, http.StatusUnauthorized, "admin call refused: its Host is not a loopback name; address this service as localhost, 127.0.0.1 or [::1], or configure admin_token"}},
	{errCrossOrigin, answer{codeUnauthorized, http.StatusUnauthorized, "admin call refused: cross-origin request (its Origin header names another site); make admin calls from curl or a server-side client, not from a web page"}},
	{errCrossSite, answer{codeUnauthorized, http.StatusUnauthorized, "admin call refused: cross-site request (Sec-Fetch-Site); make admin calls from curl or a server-side client, not from a web page"}},
	{errNoSnowflake, answer{codeNoWorkerID, http.StatusConflict, "snowflake mode is not enabled on this instance"}},
	{errNoLeases, answer{codeNoWorkerID, http.StatusConflict, "worker-ID leases are not enabled on this instance"}},
}

var internalAnswer = answer{codeInternal, http.StatusInternalServerError, "internal error"}

// paramError is a request this front end cannot read: a parameter or body
// field absent, of the wrong JSON type, badly escaped, or a body that is not
// a JSON object. The domain never sees such a request, so the words are the
// server's; what the domain refuses (a tag, step or token out of its rules)
// comes back as the domain's *Error instead. Its message is built from our
// own words and the field's name only, never from the offending value.
type paramError struct {
	msg string
}

func (e *paramError) Error() string { return e.msg }

func badParam(field, why string) error { return &paramError{"invalid " + field + ": " + why} }

func missingParam(field string) error { return &paramError{"missing " + field} }

// classify finds err's answer: a wire-format error (paramError) is a bad
// request in its own words; a domain error is answered by its Kind, with
// its message; then the server's own errors; anything else is internal.
func classify(err error) answer {
	if pe, ok := errors.AsType[*paramError](err); ok {
		return answer{codeBadRequest, http.StatusBadRequest, pe.msg}
	}
	if kind, msg, ok := describe(err); ok {
		for _, k := range kindTable {
			if k.kind == kind {
				return answer{k.code, k.status, msg}
			}
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

// fail answers err. Internal errors are logged with the request ID the
// client sees, so an operator can find the real cause; every error carries
// X-Request-Id.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) int {
	return s.failWith(w, r, err, "")
}

// failWith is fail with a "status" field, for /health.
func (s *Server) failWith(w http.ResponseWriter, r *http.Request, err error, status string) int {
	a := classify(err)
	rid := s.requestID(r)
	w.Header()[requestIDHeader] = []string{rid}
	bp := getBuf()
	b := append(*bp, `{"resp_code":`...)
	b = strconv.AppendInt(b, int64(a.code), 10)
	b = append(b, `,"msg":`...)
	b = appendString(b, a.msg)
	if status != "" {
		b = append(b, `,"status":`...)
		b = appendString(b, status)
	}
	if a.code == codeInternal {
		s.log.Error("request failed", "err", err, "request_id", rid, "method", r.Method, "path", r.URL.Path)
		b = append(b, `,"request_id":`...)
		b = appendString(b, rid)
	}
	*bp = append(b, '}')
	return sendPooled(w, a.status, bp)
}
