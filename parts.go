package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/leasestore"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
)

// notWaiting is added to the error of a database that does not answer at
// start: the start fails at once (the store's 3 s dial timeout) and a
// supervisor (compose, systemd, Kubernetes) starts idalloc again.
const notWaiting = "idalloc does not wait for the database at start: start it first, or let a supervisor restart idalloc"

// startStore opens the configured store once, logging what -init-schema
// changed. Its error names the database and says what to do
// (store.OpenError); only a database that does not answer is one a
// restart may cure (store.NeedsOperator). An embedded store's file that
// another process holds open refuses the start (store.CheckSQLiteFree).
func startStore(ctx context.Context, cfg config.Settings, initSchema bool, log *slog.Logger) (store.Store, error) {
	d, _ := store.DriverNamed(cfg.Driver)
	if d.Embedded {
		if err := store.CheckSQLiteFree(cfg.DSN); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Origin("dsn"), err)
		}
	}
	changed := false
	st, err := store.Open(ctx, cfg.Driver, cfg.DSN, store.Options{InitSchema: initSchema, Report: func(change string) {
		changed = true
		log.Info("init-schema: "+change, "driver", cfg.Driver)
	}})
	switch {
	case err == nil:
		if initSchema && !d.Embedded && !changed {
			log.Info("init-schema: the schema was complete; nothing changed", "driver", cfg.Driver)
		}
		return st, nil
	case !d.Embedded && ctx.Err() == nil && !store.NeedsOperator(err):
		return nil, fmt.Errorf("%w (%s)", err, notWaiting)
	}
	return nil, store.OpenError(cfg.Driver, cfg.Origin("dsn"), err)
}

// buildParts opens the stores and builds what the front ends serve: the
// metrics, the segment allocator and, in snowflake mode, the lease keeper
// and snowflake source. closeAll closes the stores it opened, last first;
// it is set even when err is not nil. The allocator is closed by the stop's
// hand-back, not here: its Close gives unused IDs back.
func buildParts(ctx context.Context, cfg config.Settings, initSchema bool, log *slog.Logger) (p parts, closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	st, err := startStore(ctx, cfg, initSchema, log)
	if err != nil {
		return p, closeAll, err
	}
	closers = append(closers, func() { _ = st.Close() })
	// Before anything is served or leased: a database serves one region
	// for good (docs/api.md §13).
	region := cfg.Region.Region()
	if err := segment.CheckRegion(ctx, st, region); err != nil {
		return p, closeAll, err
	}
	if !region.Single() {
		log.Info("serving "+region.String()+": segment IDs are the numbers ≡ region.id (mod region.count)",
			"region_count", region.Count, "region_id", region.ID)
	}
	p = parts{store: st, log: log}
	if p.reg, err = newRegistry(st, cfg.Driver); err != nil {
		return p, closeAll, err
	}
	if p.metrics, err = metrics.New(p.reg); err != nil {
		return p, closeAll, err
	}
	st.ObserveConflicts(p.metrics.StoreConflict)
	p.alloc, err = segment.New(ctx, st, segment.Config{
		MaxStep: cfg.Segment.MaxStep, TagRefresh: cfg.Segment.TagRefresh.Duration(), Observer: p.metrics, Logger: log,
		MaxClockSkew: cfg.Dated.MaxClockSkew.Duration(), Region: region,
	})
	if err != nil {
		return p, closeAll, fmt.Errorf("load tags: %w", err)
	}
	if p.guard, err = startGuard(ctx, cfg, st, log); err != nil {
		return p, closeAll, err
	}
	if p.guard != nil {
		closers = append(closers, func() { _ = p.guard.Close() })
		if err := access.CheckAdminToken(ctx, st, cfg.AdminToken); err != nil {
			return p, closeAll, fmt.Errorf("%s: %w", cfg.Origin("admin_token"), err)
		}
	}
	if p.admin, err = access.NewAdmin(st, segment.ValidTag, p.guard, cfg.AdminToken); err != nil {
		return p, closeAll, err
	}
	ls, err := leasestore.Open(st, cfg.Lease.Driver, cfg.Lease.DSN)
	if err != nil {
		return p, closeAll, err
	}
	closers = append(closers, ls.Close)
	ls.WarnPersistence(ctx, log)
	p.layouts = ls.Layouts
	p.leases, p.keeper, p.source, err = snowflakeParts(ls, cfg, log, p.metrics)
	return p, closeAll, err
}

// startGuard builds the per-tag token guard (docs/api.md §12). With
// alloc_auth on, tokens that cannot be loaded stop the start; with it off
// the guard only lets RESP's AUTH take a tag token, so a failure is a
// warning and no guard: AUTH then takes admin_token alone.
func startGuard(ctx context.Context, cfg config.Settings, st access.Store, log *slog.Logger) (*access.Guard, error) {
	g, err := access.NewGuard(ctx, st, access.Config{Refresh: cfg.Segment.TagRefresh.Duration(), Logger: log})
	switch {
	case err == nil:
		if cfg.AllocAuth {
			log.Info("alloc_auth on: ID calls need a per-tag token allowed for their app_tag")
		}
		return g, nil
	case cfg.AllocAuth:
		return nil, fmt.Errorf("%s: alloc_auth is on and the tokens cannot be loaded: %w", cfg.Origin("alloc_auth"), err)
	}
	log.Warn("per-tag tokens unavailable (alloc_auth is off): AUTH over RESP takes admin_token only", "err", err)
	return nil, nil
}

// gateSnowflake starts the keeper once the cluster's snowflake layout has
// been checked (leased.LayoutGate), at once or in the background; a
// mismatch stops the start, or, found later, the instance through cancel.
// It returns the gate's stop, to call before the stores close; with
// snowflake mode off, a no-op.
func gateSnowflake(ctx context.Context, cancel context.CancelCauseFunc, cfg config.Settings, p parts) (func(), error) {
	if p.keeper == nil {
		return func() {}, nil
	}
	layoutErr := func(err error) error {
		return fmt.Errorf(`keys "snowflake.layout"/"snowflake.epoch"/"snowflake.worker_bits": %w`, err)
	}
	gate := leased.LayoutGate{Layouts: p.layouts, Cluster: cfg.Snowflake.Cluster, Layout: p.source.Layout(), Logger: p.log}
	stop, err := gate.Open(ctx,
		// Not ctx: the lease must stay renewed while the server drains.
		func() { p.keeper.Start(context.Background()) },
		func(err error) {
			p.log.Error("snowflake layout differs from the cluster's: stopping", "err", err)
			cancel(layoutErr(err))
		})
	if errors.Is(err, snowflake.ErrLayoutMismatch) {
		return nil, layoutErr(err)
	}
	return stop, err // err: stopped during the first attempt
}
