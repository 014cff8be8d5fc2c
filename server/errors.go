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

// Errors the server itself raises; they go through the same table.
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

// errorTable maps every error a handler may meet to its answer; the first
// entry that errors.Is matches wins. Messages are fixed: the error's own
// text may carry internals and is only logged. Anything absent is an
// internal error.
var errorTable = []struct {
	err error
	answer
}{
	{segment.ErrInvalidTag, answer{codeBadRequest, http.StatusBadRequest, "invalid app_tag: must match ^[A-Za-z0-9_.:-]{1,64}$"}},
	{segment.ErrInvalidStep, answer{codeBadRequest, http.StatusBadRequest, "invalid step or start: step must be from 1 to the configured maximum, start from 1 to " + strconv.FormatInt(segment.MaxUsableID, 10)}},
	{segment.ErrUnknownTag, answer{codeUnknownTag, http.StatusNotFound, "unknown app_tag: create it with POST /tags first"}},
	{segment.ErrUnavailable, answer{codeUnavailable, http.StatusServiceUnavailable, "unavailable: the store is unreachable or too slow; retry (IDs already buffered are still served)"}},
	{segment.ErrClosed, answer{codeUnavailable, http.StatusServiceUnavailable, "draining: retry on another instance"}},
	{segment.ErrExhausted, answer{codeConflict, http.StatusConflict, "app_tag ID space exhausted"}},
	{segment.ErrTagExists, answer{codeConflict, http.StatusConflict, "app_tag already exists"}},

	{snowflake.ErrInvalidID, answer{codeBadRequest, http.StatusBadRequest, "invalid id: want a non-negative 64-bit snowflake ID"}},
	{snowflake.ErrClockDriftTryLater, answer{codeClockDrift, http.StatusServiceUnavailable, "clock moved backwards: retry later or on another instance"}},
	// The generator has stopped for good and gives its lease up; resp_code 4
	// rather than 3 because the cause is this host's clock, and the
	// client's remedy is the same as for a short drift: another instance.
	{snowflake.ErrClockDriftTooLargeToRecover, answer{codeClockDrift, http.StatusServiceUnavailable, "clock moved backwards too far: snowflake stopped on this instance, use another instance"}},
	{snowflake.ErrFenced, answer{codeUnavailable, http.StatusServiceUnavailable, "worker lease not confirmed: retry"}},

	{workerlease.ErrNoWorkerID, answer{codeNoWorkerID, http.StatusConflict, "no worker ID available in the cluster"}},
	{workerlease.ErrUnavailable, answer{codeUnavailable, http.StatusServiceUnavailable, "unavailable: the lease store is unreachable; retry"}},
	{workerlease.ErrTokenMismatch, answer{codeLeaseConflict, http.StatusConflict, "worker ID is held by another token"}},
	{workerlease.ErrLeaseExpired, answer{codeLeaseConflict, http.StatusConflict, "lease expired: acquire a new worker ID"}},
	{workerlease.ErrNotAssigned, answer{codeLeaseConflict, http.StatusConflict, "worker ID is not assigned"}},
	{workerlease.ErrInvalidWorkerID, answer{codeBadRequest, http.StatusBadRequest, "invalid worker_id: out of range"}},
	{workerlease.ErrInvalidToken, answer{codeBadRequest, http.StatusBadRequest, "invalid token: want 22 base64url characters"}},
	{workerlease.ErrInvalidCluster, answer{codeBadRequest, http.StatusBadRequest, "invalid cluster: want 1 to 64 characters of A-Z a-z 0-9 _ . : -"}},
	{workerlease.ErrInvalidTimestamp, answer{codeBadRequest, http.StatusBadRequest, "invalid last_timestamp_ms: must be Unix milliseconds, from 0 to a day past this server's clock"}},

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

// paramError is a bad request naming the parameter or body field at fault.
// Its message is built from our own words and the field's name only, never
// from the offending value.
type paramError struct {
	msg string
}

func (e *paramError) Error() string { return e.msg }

func badParam(field, why string) error { return &paramError{"invalid " + field + ": " + why} }

func missingParam(field string) error { return &paramError{"missing " + field} }

// classify finds err's answer.
func classify(err error) answer {
	if pe, ok := errors.AsType[*paramError](err); ok {
		return answer{codeBadRequest, http.StatusBadRequest, pe.msg}
	}
	for _, e := range errorTable {
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
