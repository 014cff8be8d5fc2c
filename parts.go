package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// dataStore is what a store driver provides to main.
type dataStore interface {
	segment.Store
	segment.RegionStore
	workerlease.Store
	access.Store
	leased.LayoutRecorder
	ObserveConflicts(func(op string))
	Close() error
}

// notWaiting is added to the error of a database that does not answer at
// start. idalloc does not wait for it: the start fails at once (within the
// store's 3 s dial timeout) and the exit status lets a supervisor start it
// again (compose's restart: unless-stopped, systemd's Restart=on-failure,
// Kubernetes), rather than an instance sit unready for a wait of its own.
const notWaiting = "idalloc does not wait for the database at start: start it first, or let a supervisor restart idalloc"

// startStore opens the configured store once, logging what -init-schema
// changed. The error names the database's host and name (the store's
// errors never carry the password) and says what to do (see
// store.OpenError): for a malformed dsn, its form; for refused
// credentials, fix the dsn (named by where it came from); for a database
// that does not exist, the statement that creates it; for missing or
// outdated tables, the statement or flag that fixes them (the store says
// it); for a database that does not answer, that it was not retried. Only
// the last is one a restart may cure (store.NeedsOperator). A SQLite file
// another process holds open refuses the start, before this one opens it
// (store.CheckSQLiteFree).
func startStore(ctx context.Context, cfg config.Settings, initSchema bool, log *slog.Logger) (dataStore, error) {
	if cfg.Driver == "sqlite" {
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
		if initSchema && cfg.Driver != "sqlite" && !changed {
			log.Info("init-schema: the schema was complete; nothing changed", "driver", cfg.Driver)
		}
		return st, nil
	case cfg.Driver != "sqlite" && ctx.Err() == nil && !store.NeedsOperator(err):
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
	if p.reg, err = newRegistry(st, cfg.Driver); err != nil { // buildinfo.go
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
		if err := checkAdminToken(ctx, cfg, st); err != nil {
			return p, closeAll, err
		}
	}
	if p.admin, err = access.NewAdmin(st, segment.ValidTag, p.guard, cfg.AdminToken); err != nil {
		return p, closeAll, err
	}
	ls, closeLeaseStore, err := openLeaseStore(st, cfg.Lease)
	if err != nil {
		return p, closeAll, err
	}
	closers = append(closers, closeLeaseStore)
	ls.warnPersistence(ctx, log)
	p.layouts = ls.layout
	p.leases, p.keeper, p.source, err = snowflakeParts(ls, cfg, log, p.metrics)
	return p, closeAll, err
}

// startGuard builds the per-tag token guard (docs/api.md §12), reloading the
// tokens every segment.tag_refresh. With alloc_auth on, a guard that
// cannot load the tokens stops the start (a database without
// alloc_tokens names -init-schema). With it off the guard only lets RESP's
// AUTH take a tag token ahead of alloc_auth being turned on, so a failure
// is a warning and no guard: AUTH then takes admin_token alone.
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

// checkAdminToken refuses an admin_token that a per-tag token has as its
// secret (docs/api.md §15): POST /tokens refuses to make one, but idalloc
// migrate, which reads no config, may have imported a Tinyid token equal
// to it, or admin_token was set to one since. Its holders would have
// admin rights, so the fix is another admin_token; the tag token stays.
func checkAdminToken(ctx context.Context, cfg config.Settings, st access.Store) error {
	if cfg.AdminToken == "" {
		return nil
	}
	toks, err := st.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("check admin_token against the per-tag tokens: %w", err)
	}
	hash := access.HashToken(cfg.AdminToken)
	for _, t := range toks {
		if t.Hash == hash {
			return fmt.Errorf("%s: the per-tag token %q has it as its secret, so its holders would have admin rights: choose another admin_token",
				cfg.Origin("admin_token"), t.Name)
		}
	}
	return nil
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
		return fmt.Errorf(`keys "snowflake.epoch"/"snowflake.worker_bits": %w`, err)
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
