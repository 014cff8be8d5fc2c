package leasetest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// testWidths: every store holds the widest input the Service passes it
// whole, counted in characters (the SQL columns' widths): a cluster of
// MaxClusterLen, a token of MaxTokenLen, a holder of MaxHolderLen, also
// of two-byte characters.
func testWidths(t *testing.T, e env) {
	st := e.open(t)
	for _, h := range []string{"h", "é"} {
		req := acquireRequest(strings.Repeat("t", workerlease.MaxTokenLen-1)+h, 7)
		req.Cluster = strings.Repeat("c", workerlease.MaxClusterLen)
		req.Holder = strings.Repeat(h, workerlease.MaxHolderLen)
		l := mustAcquire(t, st, req)
		if l.Holder != req.Holder {
			t.Errorf("Acquire: Holder of %q = %d characters, want %d", h, len([]rune(l.Holder)), workerlease.MaxHolderLen)
		}
		if r := mustRenew(t, st, l, 0); r.Holder != req.Holder || r.Token != req.Token || r.Cluster != req.Cluster {
			t.Errorf("Renew of the widest lease = holder of %d characters, token %q, cluster %q; want %d, %q, %q",
				len([]rune(r.Holder)), r.Token, r.Cluster, workerlease.MaxHolderLen, req.Token, req.Cluster)
		}
	}
}

// testServiceRefuses: the Service is the one place the lease-input rules
// live (a Store trusts its input): every malformed input is refused in the
// same words whatever the store, before the store is asked anything; a
// holder too long for the columns is cut, not refused.
func testServiceRefuses(t *testing.T, e env) {
	st := &countingStore{Store: e.open(t)}
	for _, tc := range []struct {
		name string
		cfg  workerlease.Config
		want error
	}{
		{"negative TTL", workerlease.Config{TTL: -time.Second}, workerlease.ErrInvalidConfig},
		{"TTL below 1ms", workerlease.Config{TTL: time.Millisecond - 1}, workerlease.ErrInvalidConfig},
		{"negative max worker ID", workerlease.Config{MaxWorkerID: -1}, workerlease.ErrInvalidWorkerID},
		{"long cluster", workerlease.Config{Cluster: strings.Repeat("c", workerlease.MaxClusterLen+1)}, workerlease.ErrInvalidCluster},
		{"cluster with {", workerlease.Config{Cluster: "a{b"}, workerlease.ErrInvalidCluster},
	} {
		if _, err := workerlease.NewService(st, tc.cfg); !errors.Is(err, tc.want) || !errors.Is(err, workerlease.ErrInvalidConfig) {
			t.Errorf("NewService with %s: error = %v, want %v (and %v)", tc.name, err, tc.want, workerlease.ErrInvalidConfig)
		}
	}

	svc, err := workerlease.NewService(st, workerlease.Config{Cluster: cluster, MaxWorkerID: 7, TTL: time.Minute})
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	const token = "AAAAAAAAAAAAAAAAAAAAAA" // well-formed, never issued
	for _, c := range []string{strings.Repeat("c", workerlease.MaxClusterLen+1), "a{b", "}a", "a/b", "a b"} {
		if _, err := svc.Acquire(t.Context(), c, "leasetest"); !errors.Is(err, workerlease.ErrInvalidCluster) {
			t.Errorf("Acquire in cluster %q: error = %v, want %v", c, err, workerlease.ErrInvalidCluster)
		}
	}
	for _, tc := range []struct {
		name     string
		cluster  string
		workerID int64
		token    string
		lastMS   int64
		want     error
	}{
		{"empty token", "", 0, "", 0, workerlease.ErrInvalidToken},
		{"short token", "", 0, "token-a", 0, workerlease.ErrInvalidToken},
		{"token of the column's width", "", 0, strings.Repeat("t", workerlease.MaxTokenLen), 0, workerlease.ErrInvalidToken},
		{"long token", "", 0, strings.Repeat("t", workerlease.MaxTokenLen+1), 0, workerlease.ErrInvalidToken},
		{"negative worker ID", "", -1, token, 0, workerlease.ErrInvalidWorkerID},
		{"worker ID above max", "", 8, token, 0, workerlease.ErrInvalidWorkerID},
		{"long cluster", strings.Repeat("c", workerlease.MaxClusterLen+1), 0, token, 0, workerlease.ErrInvalidCluster},
		{"cluster with }", "}a", 0, token, 0, workerlease.ErrInvalidCluster},
		{"negative timestamp", "", 0, token, -1, workerlease.ErrInvalidTimestamp},
		{"timestamp in microseconds", "", 0, token, time.Now().UnixMicro(), workerlease.ErrInvalidTimestamp},
	} {
		if _, err := svc.Renew(t.Context(), tc.cluster, tc.workerID, tc.token, tc.lastMS); !errors.Is(err, tc.want) {
			t.Errorf("%s: Renew error = %v, want %v", tc.name, err, tc.want)
		}
		if err := svc.Release(t.Context(), tc.cluster, tc.workerID, tc.token, tc.lastMS); !errors.Is(err, tc.want) {
			t.Errorf("%s: Release error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := st.calls.Load(); n != 0 {
		t.Errorf("the store was called %d times for refused input, want 0", n)
	}

	// A holder too long for the column is cut, by characters, and reaches
	// the store.
	for _, h := range []string{"h", "é"} {
		l, err := svc.Acquire(t.Context(), "", strings.Repeat(h, workerlease.MaxHolderLen+45))
		if err != nil {
			t.Fatalf("Acquire with a long holder: %v", err)
		}
		if want := strings.Repeat(h, workerlease.MaxHolderLen); l.Holder != want {
			t.Errorf("Holder of %q = %d characters, want %d", h, len([]rune(l.Holder)), workerlease.MaxHolderLen)
		}
		if r, err := svc.Renew(t.Context(), "", l.WorkerID, l.Token, 0); err != nil || r.Holder != l.Holder {
			t.Errorf("Renew after a long holder = holder of %d characters, %v; want %d, nil",
				len([]rune(r.Holder)), err, workerlease.MaxHolderLen)
		}
	}
}

// countingStore counts the lease calls that reach the store under it.
type countingStore struct {
	workerlease.Store
	calls atomic.Int64
}

func (c *countingStore) Acquire(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
	c.calls.Add(1)
	return c.Store.Acquire(ctx, req)
}

func (c *countingStore) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (workerlease.Lease, error) {
	c.calls.Add(1)
	return c.Store.Renew(ctx, cluster, workerID, token, ttl, lastTimestampMS)
}

func (c *countingStore) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	c.calls.Add(1)
	return c.Store.Release(ctx, cluster, workerID, token, lastTimestampMS)
}
