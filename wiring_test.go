package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// wired is what run builds on one store, for the tests that check the
// parts together: the metrics on reg as the segment and snowflake
// observer, the allocator, the snowflake parts with a lease held, and the
// HTTP server over them. Everything stops at the test's cleanup.
type wired struct {
	metrics *server.Metrics
	alloc   *segment.Allocator
	keeper  *workerlease.Keeper
	source  *leased.Source
	srv     *server.Server
}

// wire builds the parts on st with cfg as run does, and waits until the
// keeper holds a worker lease.
func wire(t *testing.T, st dataStore, cfg config.Settings, reg *prometheus.Registry) wired {
	t.Helper()
	ctx := context.Background()
	metrics, err := server.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := segment.New(ctx, st, segment.Config{Observer: metrics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	log := slog.New(slog.DiscardHandler)
	leases, keeper, source, err := snowflakeParts(leaseStore{Store: st, layout: st}, cfg, log, metrics)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Metrics: metrics, Gatherer: reg, Logger: log},
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
	return wired{metrics, alloc, keeper, source, srv}
}

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
func noEnv(string) string { return "" }
