package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/leasestore"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// wired is what run builds on one store, for the tests that check the
// parts together: the metrics on reg as the segment and snowflake
// observer, the allocator, the snowflake parts with a lease held, and the
// HTTP server over them. Everything stops at the test's cleanup.
type wired struct {
	metrics *metrics.Observer
	alloc   *segment.Allocator
	keeper  *workerlease.Keeper
	source  *leased.Source
	srv     *server.Server
}

// wire builds the parts on st with cfg as run does, and waits until the
// keeper holds a worker lease.
func wire(t *testing.T, st store.Store, cfg config.Settings, reg *prometheus.Registry) wired {
	t.Helper()
	ctx := context.Background()
	obs, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := segment.New(ctx, st, segment.Config{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	leases, keeper, source, err := snowflakeParts(leasestore.Store{Store: st, Layouts: st}, cfg, discard, obs)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Watch(metrics.Sources{Segments: alloc, Snowflake: true, Lease: keeper}); err != nil {
		t.Fatal(err)
	}
	httpMetrics, err := server.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Observer: obs, Metrics: httpMetrics, Gatherer: reg, Logger: discard},
		server.Deps{Segments: alloc, Store: st, Leases: leases, Snowflake: source, OwnLease: keeper})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	keeper.Start(ctx)
	t.Cleanup(func() { _ = keeper.Close(ctx, source.LastTimestampMS()) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, held := keeper.Lease(); held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no worker lease after 10s")
		}
	}
	return wired{obs, alloc, keeper, source, srv}
}

// discard is a logger that drops everything.
var discard = slog.New(slog.DiscardHandler)

// writeConfig writes body as a config file of its own and returns its path.
func writeConfig(tb testing.TB, body string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// noEnv is an environment with no IDALLOC_* variable set.
var noEnv []string

// environ is m in os.Environ's form.
func environ(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// downUntil is a layout record that fails as an unreachable store until
// back is set, counting the attempts.
type downUntil struct {
	leased.LayoutRecorder
	back     atomic.Bool
	attempts atomic.Int64
}

func (d *downUntil) CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error {
	d.attempts.Add(1)
	if !d.back.Load() {
		return errors.New("dial tcp 10.0.0.9:3306: connection refused")
	}
	return d.LayoutRecorder.CheckLayout(ctx, cluster, epochMS, workerBits)
}

// TestSnowflakeAnswers503UntilLayoutChecked: the wiring of run on a real
// store and server: while the layout check fails, /snowflake answers 503
// resp_code 3 with Retry-After and no worker lease is taken; once a check
// confirms the layout, IDs are served.
func TestSnowflakeAnswers503UntilLayoutChecked(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)
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
	layouts := &downUntil{LayoutRecorder: st}
	leases, keeper, source, err := snowflakeParts(leasestore.Store{Store: st, Layouts: layouts}, cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Logger: log},
		server.Deps{Segments: alloc, Store: st, Leases: leases, Snowflake: source, OwnLease: keeper})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	gate := leased.LayoutGate{Layouts: layouts, Cluster: cfg.Snowflake.Cluster, Layout: source.Layout(), Logger: log,
		RetryInterval: time.Millisecond, MaxRetryInterval: time.Millisecond}
	stop, err := gate.Open(ctx, func() { keeper.Start(context.Background()) }, func(err error) { t.Errorf("fatal: %v", err) })
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
	waitUntil(t, func() bool { return layouts.attempts.Load() >= 3 })
	if status, code, h := snowflake(); status != http.StatusServiceUnavailable || code != 3 || h.Get("Retry-After") == "" {
		t.Fatalf("GET /snowflake, layout unchecked: got %d resp_code %d Retry-After %q, want 503 resp_code 3 with Retry-After",
			status, code, h.Get("Retry-After"))
	}
	if _, held := keeper.Lease(); held {
		t.Fatalf("worker lease held before the layout was checked")
	}

	layouts.back.Store(true)
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
