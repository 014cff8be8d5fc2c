package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

var errStoreDown = errors.New("dial tcp 10.0.0.9:3306: connection refused")

// fakeLayouts is a layout check that fails with errStoreDown failures times,
// then answers final; it records when each attempt came.
type fakeLayouts struct {
	begun    time.Time
	failures int
	final    error
	mu       sync.Mutex
	at       []time.Duration
}

func (f *fakeLayouts) check(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = append(f.at, time.Since(f.begun))
	if len(f.at) <= f.failures {
		return errStoreDown
	}
	return f.final
}

func (f *fakeLayouts) attempts() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.at)
}

// TestLayoutCheckRetriesUntilDefinite: the keeper is started only once a
// check has confirmed the layout; failures before are retried in the
// background (1s doubling, equal jitter, the highest draw here), and a
// mismatch found then stops the instance. Before, any failure but a mismatch
// started the keeper unchecked and never checked again.
func TestLayoutCheckRetriesUntilDefinite(t *testing.T) {
	mismatch := fmt.Errorf("cluster %q uses epoch 0 ms: %w", "default", workerlease.ErrLayoutMismatch)
	secs := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Second
		}
		return out
	}
	tests := []struct {
		name        string
		failures    int
		final       error
		wantGateErr bool
		wantStart   bool
		wantFatal   bool
		wantAt      []time.Duration
	}{
		{"confirmed at once", 0, nil, false, true, false, secs(0)},
		{"mismatch at once", 0, mismatch, true, false, false, secs(0)},
		{"store down 3 times, then confirmed", 3, nil, false, true, false, secs(0, 1, 3, 7)},
		{"store down 3 times, then a mismatch", 3, mismatch, false, false, true, secs(0, 1, 3, 7)},
		{"store down 6 times, then confirmed", 6, nil, false, true, false, secs(0, 1, 3, 7, 15, 25, 35)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeLayouts{begun: time.Now(), failures: tt.failures, final: tt.final}
				lc := newLayoutCheck(f.check, discard)
				lc.randN = func(n time.Duration) time.Duration { return n - 1 }
				var started atomic.Bool
				var fatal atomic.Pointer[error]
				stop, err := lc.gate(t.Context(), func() { started.Store(true) }, func(err error) { fatal.Store(&err) })
				if (err != nil) != tt.wantGateErr || err != nil && !errors.Is(err, workerlease.ErrLayoutMismatch) {
					t.Fatalf("gate: got error %v, want one wrapping ErrLayoutMismatch: %v", err, tt.wantGateErr)
				}
				if err != nil {
					return
				}
				defer stop()
				last := tt.wantAt[len(tt.wantAt)-1]
				if last > 0 {
					time.Sleep(last - time.Nanosecond)
					synctest.Wait()
					if started.Load() {
						t.Fatalf("keeper started at %v, before the check confirmed the layout", time.Since(f.begun))
					}
					time.Sleep(time.Nanosecond)
				}
				synctest.Wait()
				if got := f.attempts(); !slices.Equal(got, tt.wantAt) {
					t.Errorf("attempts at %v, want %v", got, tt.wantAt)
				}
				if started.Load() != tt.wantStart {
					t.Errorf("keeper started: got %v, want %v", started.Load(), tt.wantStart)
				}
				if got := fatal.Load(); (got != nil) != tt.wantFatal || got != nil && !errors.Is(*got, workerlease.ErrLayoutMismatch) {
					t.Errorf("fatal called with %v, want a mismatch: %v", got, tt.wantFatal)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if got := len(f.attempts()); got != len(tt.wantAt) {
					t.Errorf("%d attempts after a definite answer, want none", got-len(tt.wantAt))
				}
			})
		})
	}
}

// TestLayoutCheckStopsWithTheInstance: stop ends the retrying at once.
func TestLayoutCheckStopsWithTheInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeLayouts{begun: time.Now(), failures: 1 << 30}
		lc := newLayoutCheck(f.check, discard)
		stop, err := lc.gate(t.Context(), func() { t.Error("keeper started with the store down") }, func(error) {})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		stop()
		n := len(f.attempts())
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(f.attempts()); got != n {
			t.Errorf("%d attempts after stop, want none", got-n)
		}
	})
}

func TestLayoutHintNamesTheMissingTable(t *testing.T) {
	missing := fmt.Errorf("check layout of cluster %q: %w", "default",
		&mysql.MySQLError{Number: 1146, Message: "Table 'ids.worker_layouts' doesn't exist"})
	if hint := layoutHint(missing); !strings.Contains(hint, "worker_layouts") || !strings.Contains(hint, "-init-schema") {
		t.Errorf("hint for a missing table: got %q, want it to name worker_layouts and -init-schema", hint)
	}
	if hint := layoutHint(errStoreDown); hint != "" {
		t.Errorf("hint for a store down: got %q, want none", hint)
	}
}

// TestSnowflakeAnswers503UntilLayoutChecked: the wiring of run on a real
// store and server: while the layout check fails, /snowflake answers 503
// resp_code 3 with Retry-After and no worker lease is taken; once a check
// confirms the layout, IDs are served.
func TestSnowflakeAnswers503UntilLayoutChecked(t *testing.T) {
	ctx := t.Context()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "ids.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg, err := config.Default().Validate()
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer alloc.Close(context.Background())
	leases, keeper, source, err := snowflakeParts(leaseStore{Store: st, layout: st}, cfg, discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Logger: discard},
		server.Deps{Segments: alloc, Store: st, Leases: leases, Snowflake: source, OwnLease: keeper})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	var storeBack atomic.Bool
	var attempts atomic.Int64
	lc := newLayoutCheck(func(ctx context.Context) error {
		attempts.Add(1)
		if !storeBack.Load() {
			return errStoreDown
		}
		return st.CheckLayout(ctx, cfg.Snowflake.Cluster, cfg.Epoch.UnixMilli(), cfg.Snowflake.WorkerBits)
	}, discard)
	lc.minWait, lc.maxWait = time.Millisecond, time.Millisecond
	stop, err := lc.gate(ctx, func() { keeper.Start(context.Background()) }, func(err error) { t.Errorf("fatal: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop()
		if err := keeper.Close(context.Background(), source.LastTimestampMS()); err != nil {
			t.Errorf("keeper.Close: %v", err)
		}
	}()

	snowflake := func() (int, int, http.Header) {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/snowflake", nil))
		var body struct {
			RespCode int `json:"resp_code"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("GET /snowflake: %v in %q", err, rec.Body)
		}
		return rec.Code, body.RespCode, rec.Header()
	}
	waitUntil(t, func() bool { return attempts.Load() >= 3 })
	if status, code, h := snowflake(); status != http.StatusServiceUnavailable || code != 3 || h.Get("Retry-After") == "" {
		t.Fatalf("GET /snowflake, layout unchecked: got %d resp_code %d Retry-After %q, want 503 resp_code 3 with Retry-After",
			status, code, h.Get("Retry-After"))
	}
	if _, held := keeper.Lease(); held {
		t.Fatalf("worker lease held before the layout was checked")
	}

	storeBack.Store(true)
	waitUntil(t, func() bool { status, _, _ := snowflake(); return status == http.StatusOK })
}

// waitUntil polls cond until it holds, failing after a generous 10s.
func waitUntil(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
