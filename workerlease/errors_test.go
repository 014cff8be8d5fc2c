package workerlease

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/idalloc/idalloc/errs"
)

// TestServiceErrorWords pins the Service's refusals to their Kind, field,
// message and sentinel: the words every front end sends.
func TestServiceErrorWords(t *testing.T) {
	s := newTestService(t, NewMemoryStore(nil), Config{MaxWorkerID: 31})
	const good = "AAAAAAAAAAAAAAAAAAAAAA"
	tests := []struct {
		name      string
		cluster   string
		workerID  int64
		token     string
		ts        int64
		wantKind  errs.Kind
		wantField string
		wantMsg   string
		wantIs    error
	}{
		{"bad cluster", "a b", 1, good, 0, errs.BadRequest, "cluster", "invalid cluster: want 1 to 64 characters of A-Z a-z 0-9 _ . : -", ErrInvalidCluster},
		{"worker ID above max", "", 32, good, 0, errs.BadRequest, "worker_id", "invalid worker_id: must be from 0 to 31", ErrInvalidWorkerID},
		{"negative worker ID", "", -1, good, 0, errs.BadRequest, "worker_id", "invalid worker_id: must be from 0 to 31", ErrInvalidWorkerID},
		{"short token", "", 1, "abc", 0, errs.BadRequest, "token", "invalid token: want 22 base64url characters", ErrInvalidToken},
		{"negative timestamp", "", 1, good, -1, errs.BadRequest, "last_timestamp_ms", "invalid last_timestamp_ms: must be Unix milliseconds, from 0 to a day past this server's clock", ErrInvalidTimestamp},
		{"cluster checked first", "a b", -1, "abc", -1, errs.BadRequest, "cluster", "invalid cluster: want 1 to 64 characters of A-Z a-z 0-9 _ . : -", ErrInvalidCluster},
		{"token holds nothing", "", 1, good, 0, errs.NotAssigned, "worker_id", "worker ID is not assigned", ErrNotAssigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Renew(context.Background(), tt.cluster, tt.workerID, tt.token, tt.ts)
			e, ok := errors.AsType[*errs.Error](err)
			if !ok {
				t.Fatalf("Renew error = %v, want an *errs.Error", err)
			}
			if e.Kind != tt.wantKind || e.Field != tt.wantField || e.Error() != tt.wantMsg {
				t.Errorf("got %s %q %q, want %s %q %q", e.Kind, e.Field, e.Error(), tt.wantKind, tt.wantField, tt.wantMsg)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
		})
	}
}

// failingStore fails every call with a fault.
type failingStore struct{ Store }

func (failingStore) Acquire(context.Context, AcquireRequest) (Lease, error) {
	return Lease{}, errors.New("dial tcp: secret")
}

// TestDescribe finds the domain error under any wrapping, and nothing in a
// fault, whose text is not for clients.
func TestDescribe(t *testing.T) {
	s := newTestService(t, failingStore{}, Config{})
	_, unavailable := s.Acquire(context.Background(), "", "")
	tests := []struct {
		err      error
		wantKind errs.Kind
		wantMsg  string
		wantOK   bool
	}{
		{unavailable, errs.Unavailable, "unavailable: the lease store is unreachable; retry", true},
		{fmt.Errorf("acquire worker ID in cluster %q: %w", "c", ErrNoWorkerID), errs.NoWorkerID, "no worker ID available in the cluster", true},
		{fmt.Errorf("renew: %w", ErrTokenMismatch), errs.TokenMismatch, "worker ID is held by another token", true},
		{fmt.Errorf("renew: %w", ErrLeaseExpired), errs.LeaseExpired, "lease expired: acquire a new worker ID", true},
		{errors.New("dial tcp: secret"), "", "", false},
	}
	for _, tt := range tests {
		var kind errs.Kind
		var msg string
		e, ok := errs.Describe(tt.err)
		if ok {
			kind, msg = e.Kind, e.Error()
		}
		if kind != tt.wantKind || msg != tt.wantMsg || ok != tt.wantOK {
			t.Errorf("Describe(%v) = %q, %q, %v; want %q, %q, %v", tt.err, kind, msg, ok, tt.wantKind, tt.wantMsg, tt.wantOK)
		}
	}
}
