package grpcapi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// Domain is the ErrorInfo domain of every refusal.
const Domain = "idalloc"

// kindCode is the one place that picks the gRPC status code of each kind
// of the vocabulary (package errs, docs/api.md §14); the message is the
// error's own, the one HTTP sends as msg. A kind missing here is answered
// as internal; TestKindCode holds it to errs.Kinds.
var kindCode = map[errs.Kind]codes.Code{
	errs.BadRequest:   codes.InvalidArgument,
	errs.UnknownTag:   codes.NotFound,
	errs.UnknownRoute: codes.Unimplemented,
	errs.Unavailable:  codes.Unavailable,
	errs.Draining:     codes.Unavailable,
	// Retry, later or on another instance, as HTTP's 503.
	errs.ClockBackwards: codes.Unavailable,
	// No worker ID free, or snowflake mode off: the system is not in the
	// state the call needs, and retrying at once cures neither.
	errs.NoWorkerID: codes.FailedPrecondition,
	// A worker lease call with a token that does not hold the worker ID:
	// acquire a lease again.
	errs.TokenMismatch:    codes.FailedPrecondition,
	errs.LeaseExpired:     codes.FailedPrecondition,
	errs.NotAssigned:      codes.FailedPrecondition,
	errs.Unauthorized:     codes.Unauthenticated,
	errs.Forbidden:        codes.PermissionDenied,
	errs.Internal:         codes.Internal,
	errs.MethodNotAllowed: codes.Unimplemented,
	errs.Exists:           codes.AlreadyExists,
	errs.Exhausted:        codes.ResourceExhausted,
	// A dated tag's period spent: RESOURCE_EXHAUSTED, whose clients
	// retry with backoff, with a RetryInfo until the next period; not
	// UNAVAILABLE, since every instance shares the period's counter.
	errs.PeriodExhausted: codes.ResourceExhausted,
}

// retryAfterError is an error that says when to retry
// (dated.ExhaustedError, workerlease.WaitError).
type retryAfterError interface {
	error
	RetryAfterSeconds() int64
}

// The front end's own refusals, in HTTP's words where HTTP refuses the
// same thing.
var (
	errUnauthorized = errs.E(errs.Unauthorized, "", "missing or wrong admin token: send the metadata authorization: Bearer <admin_token>", nil)
	errLoopbackOnly = errs.E(errs.Unauthorized, "", "admin calls are served to loopback clients only: configure admin_token", nil)
	errNoLeases     = errs.E(errs.NoWorkerID, "", "worker-ID leases are not enabled on this instance", nil)
	// errStreamTag: a later message of a StreamRanges names another tag
	// than its first.
	errStreamTag = errs.E(errs.BadRequest, "app_tag", "a stream serves the tag of its first message: name it again or leave it empty", nil)
)

// statusOf is err as a status: its kind's code and its words, with an
// ErrorInfo (reason the kind, metadata "field" when a field is at fault
// and "left" when a batch is larger than its tag has left) and, for a
// kind that says retry, a RetryInfo. A context's end is its own code; an
// error that is no *errs.Error is internal, its text only logged.
func (s *Server) statusOf(method string, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	e, ok := errs.Describe(err)
	code, known := kindCode[errs.KindOf(err)]
	if !ok || !known || e.Kind == errs.Internal {
		s.log.Error("grpc call failed", "err", err, "method", method)
		return withDetails(codes.Internal, "internal error", errs.Internal, nil, 0)
	}
	msg := e.Error()
	if pe, ok := errors.AsType[*dated.ExhaustedError](err); ok {
		msg = pe.Error() // with when the next period begins
	}
	var md map[string]string
	if e.Field != "" {
		md = map[string]string{"field": e.Field}
	}
	if tl, ok := errors.AsType[*segment.TooLargeError](err); ok && tl.Left > 0 {
		if md == nil {
			md = map[string]string{}
		}
		md["left"] = strconv.FormatInt(tl.Left, 10)
	}
	return withDetails(code, msg, e.Kind, md, retryAfter(e.Kind, err))
}

// retryAfter is how long the caller should wait before retrying, in
// seconds, for a kind that says retry: what the error says, else 1 (HTTP's
// Retry-After); 0 for the other kinds.
func retryAfter(kind errs.Kind, err error) int64 {
	if ra, ok := errors.AsType[retryAfterError](err); ok {
		return max(ra.RetryAfterSeconds(), 1)
	}
	switch kind {
	case errs.Unavailable, errs.Draining, errs.ClockBackwards, errs.PeriodExhausted:
		return 1
	}
	return 0
}

// withDetails is a status of code and msg carrying kind (ErrorInfo) and
// a retry delay (RetryInfo) when retry > 0.
func withDetails(code codes.Code, msg string, kind errs.Kind, md map[string]string, retry int64) error {
	st := status.New(code, msg)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: string(kind), Domain: Domain, Metadata: md}}
	if retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(retry) * time.Second)})
	}
	if d, err := st.WithDetails(details...); err == nil {
		st = d
	}
	return st.Err()
}
