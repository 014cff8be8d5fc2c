package workerlease

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func newTestService(tb testing.TB, store Store, cfg Config) *Service {
	tb.Helper()
	s, err := NewService(store, cfg)
	if err != nil {
		tb.Fatalf("NewService: %v", err)
	}
	return s
}

func TestNewServiceDefaults(t *testing.T) {
	s := newTestService(t, NewMemoryStore(nil), Config{})
	if got, want := s.Cluster(), "default"; got != want {
		t.Errorf("Cluster() = %q, want %q", got, want)
	}
	if got, want := s.MaxWorkerID(), int64(1023); got != want {
		t.Errorf("MaxWorkerID() = %d, want %d", got, want)
	}
	if got, want := s.TTL(), 30*time.Second; got != want {
		t.Errorf("TTL() = %v, want %v", got, want)
	}
}

func TestNewServiceInvalid(t *testing.T) {
	tests := []struct {
		name  string
		store Store
		cfg   Config
		want  error
	}{
		{"nil store", nil, Config{}, ErrInvalidConfig},
		{"bad cluster", NewMemoryStore(nil), Config{Cluster: "a b"}, ErrInvalidCluster},
		{"long cluster", NewMemoryStore(nil), Config{Cluster: strings.Repeat("c", 65)}, ErrInvalidCluster},
		{"negative max worker ID", NewMemoryStore(nil), Config{MaxWorkerID: -1}, ErrInvalidWorkerID},
		{"negative TTL", NewMemoryStore(nil), Config{TTL: -time.Second}, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewService(tt.store, tt.cfg)
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewService() error = %v, want %v (and ErrInvalidConfig)", err, tt.want)
			}
		})
	}
}

func TestServiceValidation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s := newTestService(t, NewMemoryStore(nil), Config{MaxWorkerID: 31, Now: func() time.Time { return now }})
	good := "AAAAAAAAAAAAAAAAAAAAAA"
	// A holder may report up to its TTL (default 30s) and a day ahead.
	latest := now.Add(30*time.Second + 24*time.Hour).UnixMilli()
	tests := []struct {
		name     string
		cluster  string
		workerID int64
		token    string
		lastMS   int64
		want     error
	}{
		{"token too short", "", 1, good[:21], 0, ErrInvalidToken},
		{"token too long", "", 1, good + "A", 0, ErrInvalidToken},
		{"token empty", "", 1, "", 0, ErrInvalidToken},
		{"token padded", "", 1, good[:20] + "==", 0, ErrInvalidToken},
		{"token std base64 plus", "", 1, good[:21] + "+", 0, ErrInvalidToken},
		{"token std base64 slash", "", 1, "/" + good[1:], 0, ErrInvalidToken},
		{"token non-ASCII", "", 1, good[:20] + "é", 0, ErrInvalidToken},
		{"negative worker ID", "", -1, good, 0, ErrInvalidWorkerID},
		{"worker ID above max", "", 32, good, 0, ErrInvalidWorkerID},
		{"negative timestamp", "", 1, good, -1, ErrInvalidTimestamp},
		{"timestamp in microseconds", "", 1, good, now.UnixMicro(), ErrInvalidTimestamp},
		{"timestamp just past the limit", "", 1, good, latest + 1, ErrInvalidTimestamp},
		{"timestamp at the limit", "", 1, good, latest, ErrNotAssigned},
		{"bad cluster", "bad cluster", 1, good, 0, ErrInvalidCluster},
		{"cluster too long", strings.Repeat("x", 65), 1, good, 0, ErrInvalidCluster},
		{"cluster with quote", "c'", 1, good, 0, ErrInvalidCluster},
		{"well-formed but unknown", "", 1, good, 0, ErrNotAssigned},
		{"max worker ID, other cluster", "a-Z_0.9:x", 31, "_-" + good[2:], 5, ErrNotAssigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Renew(ctx, tt.cluster, tt.workerID, tt.token, tt.lastMS)
			if !errors.Is(err, tt.want) {
				t.Errorf("Renew() error = %v, want %v", err, tt.want)
			}
			err = s.Release(ctx, tt.cluster, tt.workerID, tt.token, tt.lastMS)
			if !errors.Is(err, tt.want) {
				t.Errorf("Release() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestServiceAcquireBadCluster(t *testing.T) {
	s := newTestService(t, NewMemoryStore(nil), Config{})
	_, err := s.Acquire(context.Background(), "no/slash", "h")
	if !errors.Is(err, ErrInvalidCluster) {
		t.Errorf("Acquire() error = %v, want %v", err, ErrInvalidCluster)
	}
}

func TestServiceToken(t *testing.T) {
	entropy := bytes.Repeat([]byte{0xfb, 0xff, 0x01, 0x80}, 4)
	s := newTestService(t, NewMemoryStore(nil), Config{Rand: bytes.NewReader(entropy), Holder: "host-1"})
	l, err := s.Acquire(context.Background(), "", "")
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if got, want := l.Token, base64.RawURLEncoding.EncodeToString(entropy); got != want {
		t.Errorf("token = %q, want %q", got, want)
	}
	if got, want := len(l.Token), 22; got != want {
		t.Errorf("len(token) = %d, want %d", got, want)
	}
	if !ValidToken(l.Token) {
		t.Errorf("ValidToken(%q) = false, want true", l.Token)
	}
	if got, want := l.Holder, "host-1"; got != want {
		t.Errorf("holder = %q, want %q", got, want)
	}
	if got, want := l.Cluster, "default"; got != want {
		t.Errorf("cluster = %q, want %q", got, want)
	}
}

func TestServiceTokensDiffer(t *testing.T) {
	s := newTestService(t, NewMemoryStore(nil), Config{MaxWorkerID: 99})
	seen := make(map[string]bool)
	for range 100 {
		l, err := s.Acquire(context.Background(), "", "")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if seen[l.Token] {
			t.Fatalf("token %q issued twice", l.Token)
		}
		seen[l.Token] = true
	}
}

func TestServiceRandFailure(t *testing.T) {
	s := newTestService(t, NewMemoryStore(nil), Config{Rand: bytes.NewReader(make([]byte, 15))})
	_, err := s.Acquire(context.Background(), "", "")
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Acquire() error = %v, want %v", err, io.ErrUnexpectedEOF)
	}
}

func TestValidToken(t *testing.T) {
	tests := []struct {
		tok  string
		want bool
	}{
		{"abcdefghijklmnopqrstuv", true},
		{"ABCDEFGHIJKLMNOPQRSTUV", true},
		{"0123456789-_0123456789", true},
		{"abcdefghijklmnopqrstu", false},
		{"abcdefghijklmnopqrstuvw", false},
		{"abcdefghijklmnopqrst.v", false},
		{"abcdefghijklmnopqrst v", false},
		{"abcdefghijklmnopqrst\x00v", false},
	}
	for _, tt := range tests {
		if got := ValidToken(tt.tok); got != tt.want {
			t.Errorf("ValidToken(%q) = %v, want %v", tt.tok, got, tt.want)
		}
	}
}

// TestServiceStoreFailures: the lease outcomes pass through as they are;
// any other store failure becomes ErrUnavailable, its cause kept.
func TestServiceStoreFailures(t *testing.T) {
	down := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"unreachable", down, ErrUnavailable},
		{"timeout", context.DeadlineExceeded, ErrUnavailable},
		{"expired", ErrLeaseExpired, ErrLeaseExpired},
		{"taken", ErrTokenMismatch, ErrTokenMismatch},
		{"not assigned", ErrNotAssigned, ErrNotAssigned},
		{"full", ErrNoWorkerID, ErrNoWorkerID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &faultStore{
				Store:       NewMemoryStore(nil),
				AcquireFunc: func(context.Context, AcquireRequest) (Lease, error) { return Lease{}, tc.err },
				RenewFunc: func(context.Context, string, int64, string, time.Duration, int64) (Lease, error) {
					return Lease{}, tc.err
				},
				ReleaseFunc: func(context.Context, string, int64, string, int64) error { return tc.err },
			}
			s := newTestService(t, fs, Config{})
			tok := strings.Repeat("A", 22)
			_, errA := s.Acquire(t.Context(), "", "")
			_, errR := s.Renew(t.Context(), "", 1, tok, 0)
			errL := s.Release(t.Context(), "", 1, tok, 0)
			for _, err := range []error{errA, errR, errL} {
				if !errors.Is(err, tc.want) || !errors.Is(err, tc.err) {
					t.Errorf("got %v, want %v wrapping %v", err, tc.want, tc.err)
				}
				if tc.want != ErrUnavailable && errors.Is(err, ErrUnavailable) {
					t.Errorf("got %v: a lease outcome marked unavailable", err)
				}
			}
		})
	}
}
