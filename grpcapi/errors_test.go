package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// TestKindCode holds the table to the vocabulary: every kind has its
// code (docs/api.md §14), and its status carries the kind, the field and,
// for a kind that says retry, a retry delay.
func TestKindCode(t *testing.T) {
	want := map[errs.Kind]codes.Code{
		errs.BadRequest:       codes.InvalidArgument,
		errs.UnknownTag:       codes.NotFound,
		errs.UnknownRoute:     codes.Unimplemented,
		errs.Unavailable:      codes.Unavailable,
		errs.Draining:         codes.Unavailable,
		errs.ClockBackwards:   codes.Unavailable,
		errs.NoWorkerID:       codes.FailedPrecondition,
		errs.TokenMismatch:    codes.FailedPrecondition,
		errs.LeaseExpired:     codes.FailedPrecondition,
		errs.NotAssigned:      codes.FailedPrecondition,
		errs.Unauthorized:     codes.Unauthenticated,
		errs.Forbidden:        codes.PermissionDenied,
		errs.Internal:         codes.Internal,
		errs.MethodNotAllowed: codes.Unimplemented,
		errs.Exists:           codes.AlreadyExists,
		errs.Exhausted:        codes.ResourceExhausted,
		errs.PeriodExhausted:  codes.ResourceExhausted,
	}
	retries := map[errs.Kind]bool{errs.Unavailable: true, errs.Draining: true, errs.ClockBackwards: true, errs.PeriodExhausted: true}
	s, err := New(Config{}, Deps{Segments: nopSegments{}, Store: pinger(func(context.Context) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range errs.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			code, ok := kindCode[kind]
			if !ok {
				t.Fatalf("no code for kind %q", kind)
			}
			if code != want[kind] {
				t.Errorf("code %v, want %v", code, want[kind])
			}
			got := answerOf(t, s.statusOf("Test", fmt.Errorf("wrapped: %w", errs.E(kind, "count", "the words", nil))))
			wantMsg, wantKind, wantField := "the words", string(kind), "count"
			if kind == errs.BadRequest {
				wantMsg = "invalid count: the words"
			}
			if kind == errs.Internal { // its text is for the log alone
				wantMsg, wantField = "internal error", ""
			}
			if got.code != code || got.kind != wantKind || got.field != wantField || got.msg != wantMsg {
				t.Errorf("status: got %+v, want %v %q field %q %q", got, code, wantKind, wantField, wantMsg)
			}
			if (got.retry > 0) != retries[kind] {
				t.Errorf("retry delay %v, want one: %v", got.retry, retries[kind])
			}
		})
	}
}

// TestStatusOf covers what is not a kind of the vocabulary: faults,
// contexts' ends, the retry an error names and what a batch has left.
func TestStatusOf(t *testing.T) {
	s, err := New(Config{}, Deps{Segments: nopSegments{}, Store: pinger(func(context.Context) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		err   error
		code  codes.Code
		kind  string
		retry time.Duration
	}{
		{"a fault is internal", errors.New("dial tcp: refused"), codes.Internal, "internal", 0},
		{"cancelled", context.Canceled, codes.Canceled, "", 0},
		{"deadline", fmt.Errorf("fetch: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "", 0},
		{"unavailable retries in 1s", segment.ErrUnavailable, codes.Unavailable, "unavailable", time.Second},
		{"a named retry", retryIn{7}, codes.Unavailable, "unavailable", 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := answerOf(t, s.statusOf("Test", tt.err))
			if got.code != tt.code || got.kind != tt.kind || got.retry != tt.retry {
				t.Errorf("got %+v, want %v %q retry %v", got, tt.code, tt.kind, tt.retry)
			}
			if tt.code == codes.Internal && got.msg != "internal error" {
				t.Errorf("an internal error says %q", got.msg)
			}
		})
	}
}

// retryIn is an unavailable error that says when to retry.
type retryIn struct{ s int64 }

func (e retryIn) Error() string            { return "wait" }
func (e retryIn) Unwrap() error            { return segment.ErrUnavailable }
func (e retryIn) RetryAfterSeconds() int64 { return e.s }

// nopSegments is a Segments that serves nothing: for what needs none.
type nopSegments struct{ Segments }

func (nopSegments) TotalBuffered() int64 { return 0 }
