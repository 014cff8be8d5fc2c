package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/buildinfo"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/grpcapi"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/resp"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// parts are what run built for the front ends to serve. keeper and source
// are nil when snowflake mode is off; guard is nil when the tokens could
// not be loaded and alloc_auth is off (startGuard).
type parts struct {
	alloc   *segment.Allocator
	guard   *access.Guard
	admin   *access.Admin
	store   store.Store
	leases  *workerlease.Service
	keeper  *workerlease.Keeper
	source  *leased.Source
	layouts leased.LayoutRecorder // where the lease store records layouts
	metrics *metrics.Observer
	reg     *prometheus.Registry
	log     *slog.Logger
}

// others are the front ends beside HTTP, each served when its address key
// is set: a new front end is its package, its config keys and one entry.
var others = []struct {
	name, key string
	addr      func(config.Settings) string
	build     func(config.Settings, parts) (frontend.Server, error)
}{
	{"resp", "resp_addr", func(c config.Settings) string { return c.RespAddr }, newRESP},
	{"grpc", "grpc_addr", func(c config.Settings) string { return c.GRPCAddr }, newGRPC},
}

// addrs are the addresses run listens on (frontend.Listen): HTTP's, and
// each other front end's.
func addrs(cfg config.Settings) []frontend.Addr {
	as := []frontend.Addr{{Name: "http", Key: cfg.Origin("http_addr"), Addr: cfg.HTTPAddr}}
	for _, o := range others {
		as = append(as, frontend.Addr{Name: o.name, Key: cfg.Origin(o.key), Addr: o.addr(cfg)})
	}
	return as
}

// frontEnds points the metrics at what the front ends serve, and builds a
// front end for each listener open: HTTP always, each other when its
// address is set. The HTTP server is also returned for its Close, which
// stops its store health checker.
func frontEnds(cfg config.Settings, lns frontend.Listeners, p parts) ([]frontend.Front, *server.Server, error) {
	deps := server.Deps{Segments: p.alloc, Store: p.store, Leases: p.leases, Tokens: p.admin}
	watched := metrics.Sources{Segments: p.alloc, MaxTagSeries: cfg.Metrics.MaxTagSeries}
	if p.guard != nil { // not a nil *Guard in an interface
		deps.Guard = p.guard
	}
	if p.keeper != nil {
		deps.Snowflake = p.source
		own := leased.OwnLease{Keeper: p.keeper, Source: p.source}
		deps.OwnLease = own
		deps.Leases = leased.LayoutLeases{Service: p.leases, Layout: p.source.Layout()}
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
	for _, o := range others {
		if ln := lns[o.name]; ln != nil {
			s, err := o.build(cfg, p)
			if err != nil {
				_ = srv.Close()
				return nil, nil, err
			}
			fronts = append(fronts, frontend.Front{Name: o.name, Server: s, Listener: ln})
		}
	}
	return fronts, srv, nil
}

// newRESP builds the Redis-protocol front end, its metrics on p's registry.
func newRESP(cfg config.Settings, p parts) (frontend.Server, error) {
	deps := resp.Deps{Segments: p.alloc, Audit: p.admin}
	if p.guard != nil {
		deps.Guard = p.guard
	}
	if p.keeper != nil {
		deps.Snowflake = p.source
	}
	m, err := resp.NewMetrics(p.reg)
	if err != nil {
		return nil, err
	}
	s, err := resp.New(resp.Config{
		AdminToken: cfg.AdminToken, AllocAuth: cfg.AllocAuth, MaxBatch: cfg.MaxBatch,
		MaxConns: cfg.RespMaxConns, IdleTimeout: cfg.RespIdleTimeout.Duration(), CommandTimeout: cfg.RespCommandTimeout.Duration(),
		MaxPending: cfg.RespMaxPending, MaxPendingTotal: cfg.RespMaxPendingTotal,
		Version: buildinfo.Read(version, revision).Version, Logger: p.log, Metrics: m,
	}, deps)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newGRPC builds the gRPC front end, its metrics on p's registry.
func newGRPC(cfg config.Settings, p parts) (frontend.Server, error) {
	deps := grpcapi.Deps{Segments: p.alloc, Store: p.store, Leases: p.leases, Audit: p.admin}
	if p.guard != nil {
		deps.Guard = p.guard
	}
	if p.keeper != nil {
		deps.Snowflake = p.source
		deps.Leases = leased.LayoutLeases{Service: p.leases, Layout: p.source.Layout()}
	}
	m, err := grpcapi.NewMetrics(p.reg)
	if err != nil {
		return nil, err
	}
	s, err := grpcapi.New(grpcapi.Config{
		AdminToken: cfg.AdminToken, AllocAuth: cfg.AllocAuth, MaxBatch: cfg.MaxBatch, MaxRange: cfg.MaxRange,
		MaxConns: cfg.GRPCMaxConns, MaxStreams: cfg.GRPCMaxStreams, Logger: p.log, Metrics: m,
	}, deps)
	if err != nil {
		return nil, err
	}
	return s, nil
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
	if ln := lns["grpc"]; ln != nil {
		log.Info("idalloc serving gRPC", "addr", ln.Addr().String(),
			"grpc_max_conns", cfg.GRPCMaxConns, "grpc_max_streams", cfg.GRPCMaxStreams)
	}
}

// handBack is what the stop hands back once the front ends have answered
// their last request: the unused segment IDs, and the worker lease with
// the last timestamp used. A second signal skips it (frontend.WatchSignals)
// as kill -9 does, safely: nothing is served before the store recorded it
// as taken, so exiting early loses only a gap in the sequence and the
// worker ID until its TTL frees it by the store's clock.
func handBack(alloc *segment.Allocator, keeper *workerlease.Keeper, source *leased.Source) []func(context.Context) error {
	fs := []func(context.Context) error{alloc.Close}
	if keeper != nil {
		fs = append(fs, func(ctx context.Context) error { return keeper.Close(ctx, source.LastTimestampMS()) })
	}
	return fs
}
