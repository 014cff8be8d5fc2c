package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/resp"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// parts are what run built for the front ends to serve. keeper and source
// are nil when snowflake mode is off; guard is nil when the tokens could
// not be loaded and alloc_auth is off (startGuard).
type parts struct {
	alloc   *segment.Allocator
	guard   *access.Guard
	admin   *access.Admin
	store   dataStore
	leases  *workerlease.Service
	keeper  *workerlease.Keeper
	source  *leased.Source
	layouts leased.LayoutRecorder // where the lease store records layouts
	metrics *metrics.Observer
	reg     *prometheus.Registry
	log     *slog.Logger
}

// frontEnds points the metrics at what the front ends serve, and builds a
// front end for each listener open (frontend.Listen): HTTP always, the
// Redis protocol when resp_addr is set. A new front end is one more
// address in run and one more entry here. The HTTP server is also
// returned for its Close, which stops its store health checker.
func frontEnds(cfg config.Settings, lns frontend.Listeners, p parts) ([]frontend.Front, *server.Server, error) {
	deps := server.Deps{Segments: p.alloc, Store: p.store, Leases: p.leases, Tokens: p.admin}
	respDeps := resp.Deps{Segments: p.alloc, Audit: p.admin}
	watched := metrics.Sources{Segments: p.alloc, MaxTagSeries: cfg.Metrics.MaxTagSeries}
	if p.guard != nil { // not a nil *Guard in an interface
		deps.Guard, respDeps.Guard = p.guard, p.guard
	}
	if p.keeper != nil {
		deps.Snowflake, respDeps.Snowflake = p.source, p.source
		own := ownLease{p.keeper, p.source}
		deps.OwnLease, deps.Leases = own, layoutLeases{p.leases, p.source.Layout()}
		watched.Snowflake, watched.Lease = true, own
	}
	if err := p.metrics.Watch(watched); err != nil {
		return nil, nil, err
	}
	httpMetrics, err := server.NewMetrics(p.reg)
	if err != nil {
		return nil, nil, err
	}
	srv, err := server.New(server.Config{
		AdminToken: cfg.AdminToken, AllocAuth: cfg.AllocAuth, MaxBatch: cfg.MaxBatch, MaxRange: cfg.MaxRange, MaxConns: cfg.MaxConns,
		Logger: p.log, Observer: p.metrics, Metrics: httpMetrics, Gatherer: p.reg,
	}, deps)
	if err != nil {
		return nil, nil, err
	}
	fronts := []frontend.Front{{Name: "http", Server: srv, Listener: lns["http"]}}
	if ln := lns["resp"]; ln != nil {
		respSrv, err := newRESP(cfg, respDeps, p)
		if err != nil {
			_ = srv.Close()
			return nil, nil, err
		}
		fronts = append(fronts, frontend.Front{Name: "resp", Server: respSrv, Listener: ln})
	}
	return fronts, srv, nil
}

// newRESP builds the Redis-protocol front end, its metrics on p's registry.
func newRESP(cfg config.Settings, deps resp.Deps, p parts) (*resp.Server, error) {
	m, err := resp.NewMetrics(p.reg)
	if err != nil {
		return nil, err
	}
	return resp.New(resp.Config{
		AdminToken: cfg.AdminToken, AllocAuth: cfg.AllocAuth, MaxBatch: cfg.MaxBatch,
		MaxConns: cfg.RespMaxConns, IdleTimeout: cfg.RespIdleTimeout.Duration(), CommandTimeout: cfg.RespCommandTimeout.Duration(),
		MaxPending: cfg.RespMaxPending, MaxPendingTotal: cfg.RespMaxPendingTotal,
		Version: readBuildStamp().Version, Logger: p.log, Metrics: m,
	}, deps)
}

// logServing says where the instance serves, once it is about to.
func logServing(log *slog.Logger, cfg config.Settings, lns frontend.Listeners) {
	log.Info("idalloc serving", "addr", lns["http"].Addr().String(), "driver", cfg.Driver, "snowflake", cfg.Snowflake.Enabled,
		"max_conns", cfg.MaxConns)
	if ln := lns["resp"]; ln != nil {
		log.Info("idalloc serving the Redis protocol", "addr", ln.Addr().String(),
			"resp_max_conns", cfg.RespMaxConns, "resp_idle_timeout", cfg.RespIdleTimeout.Duration(),
			"resp_command_timeout", cfg.RespCommandTimeout.Duration())
	}
}

// handBack is what the stop hands back once the front ends have answered
// their last request: the unused segment IDs, and the worker lease with
// the last timestamp used.
//
// A second signal skips it (frontend.WatchSignals), which is safe by
// construction: nothing is served before the store has recorded it as
// taken (a segment range after its max_id compare-and-set committed, a
// snowflake timestamp after a lease renewal reserved it), so exiting early
// loses only what the hand-back would have returned: the unused rest of
// the segments, a gap in the sequence, and the worker ID, which the
// lease's TTL frees by the store's clock. That is what kill -9 does, and
// guarantee 1 holds across kill -9.
func handBack(alloc *segment.Allocator, keeper *workerlease.Keeper, source *leased.Source) []func(context.Context) error {
	fs := []func(context.Context) error{alloc.Close}
	if keeper != nil {
		fs = append(fs, func(ctx context.Context) error { return keeper.Close(ctx, source.LastTimestampMS()) })
	}
	return fs
}
