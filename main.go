// Command idalloc serves segment (Leaf-style) and snowflake IDs over HTTP,
// and over the Redis protocol when resp_addr is set. main only wires: it
// loads the config, opens the store, builds the segment allocator, the
// worker lease keeper and snowflake source, and the front ends, serves
// until SIGTERM/SIGINT, then drains and hands back what it holds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/migrate/cmd"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// gcPercent replaces Go's default GOGC of 100 unless GOGC is set. idalloc's
// live heap is under a few MB, so at 100 the collector runs every ~4 MB
// allocated: over 60 times a second at 80k req/s on one core, about 4% of
// the CPU and a pause in every request in flight. At 400 it runs a quarter as
// often for ~12 MB more memory.
const gcPercent = 400

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "help" {
		args = []string{"-help"}
	}
	name, do := "idalloc", run
	switch {
	case len(args) > 0 && args[0] == "migrate":
		name, do, args = "idalloc migrate", migrateMain, args[1:]
	case len(args) > 0 && args[0] == "advance":
		name, do, args = "idalloc advance", advanceMain, args[1:]
	}
	if err := do(args); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// migrateMain and advanceMain run the tools (package migrate/cmd) on this
// process's output and environment; advance gets the lease stores through
// main, which alone imports their adapters.
func migrateMain(args []string) error { return cmd.Migrate(args, os.Stdout, os.Stderr) }

func advanceMain(args []string) error {
	return cmd.Advance(args, os.Stdout, os.Stderr, os.Getenv, advanceLeases)
}

// dataStore is what a store driver provides to main.
type dataStore interface {
	segment.Store
	workerlease.Store
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
// store.OpenError): for refused credentials, fix the dsn (named by where
// it came from); for missing or outdated tables, the statement or flag
// that fixes them (the store says it); for a database that does not
// answer, that it was not retried. Only the last is one a restart may
// cure.
func startStore(ctx context.Context, cfg config.Settings, initSchema bool, log *slog.Logger) (dataStore, error) {
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
	case cfg.Driver != "sqlite" && ctx.Err() == nil && !errors.Is(err, store.ErrAccessDenied) &&
		!errors.Is(err, store.ErrOutdatedSchema) && !errors.Is(err, store.ErrMissingTables):
		return nil, fmt.Errorf("%w (%s)", err, notWaiting)
	}
	return nil, store.OpenError(cfg.Driver, cfg.Origin("dsn"), err)
}

func run(args []string) error {
	flags, err := config.ParseServe(args, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage was asked for and printed
	}
	if err != nil {
		return err
	}
	if flags.Version {
		fmt.Println(readBuildStamp())
		return nil
	}
	cfg, err := config.Load(flags.ConfigPath, flags.ConfigRequired, os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}

	// ctx ends at the first SIGINT/SIGTERM (cause frontend.ErrStopSignal),
	// or when the instance must stop for another reason (a layout mismatch
	// found in the background, a front end failing), with that reason as
	// cause.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	defer frontend.WatchSignals(ctx, cancel, cfg.Durations.ShutdownTimeout, log)()

	// Listen first: a taken port fails before a lease or a segment is held.
	lns, err := frontend.Listen(
		frontend.Addr{Name: "http", Key: cfg.Origin("http_addr"), Addr: cfg.HTTPAddr},
		frontend.Addr{Name: "resp", Key: cfg.Origin("resp_addr"), Addr: cfg.RespAddr})
	if err != nil {
		return err
	}
	defer lns.Close() // if the start fails before they are served

	st, err := startStore(ctx, cfg, flags.InitSchema, log)
	if err != nil {
		return err
	}
	defer st.Close()

	reg, err := newRegistry(st, cfg.Driver) // buildinfo.go
	if err != nil {
		return err
	}
	metrics, err := server.NewMetrics(reg)
	if err != nil {
		return err
	}
	st.ObserveConflicts(metrics.StoreConflict)

	alloc, err := segment.New(ctx, st, segment.Config{
		MaxStep: cfg.Segment.MaxStep, TagRefresh: cfg.Durations.TagRefresh, Observer: metrics, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("load tags: %w", err)
	}

	leaseStore, closeLeaseStore, err := openLeaseStore(st, cfg.Lease)
	if err != nil {
		return err
	}
	defer closeLeaseStore()
	leaseStore.warnPersistence(ctx, log)
	leases, keeper, source, err := snowflakeParts(leaseStore, cfg, log, metrics)
	if err != nil {
		return err
	}
	fronts, srv, err := frontEnds(cfg, lns, parts{alloc, st, leases, keeper, source, metrics, reg, log})
	if err != nil {
		return err
	}
	defer srv.Close()
	stopLayoutCheck := func() {}
	if keeper != nil {
		layoutErr := func(err error) error {
			return fmt.Errorf(`keys "snowflake.epoch"/"snowflake.worker_bits": %w`, err)
		}
		gate := leased.LayoutGate{Layouts: leaseStore.layout, Cluster: cfg.Snowflake.Cluster,
			Layout: source.Layout(), Logger: log}
		stopLayoutCheck, err = gate.Open(ctx,
			// Not ctx: the lease must stay renewed while the server drains.
			func() { keeper.Start(context.Background()) },
			func(err error) {
				log.Error("snowflake layout differs from the cluster's: stopping", "err", err)
				cancel(layoutErr(err))
			})
		if errors.Is(err, snowflake.ErrLayoutMismatch) {
			return layoutErr(err)
		}
		if err != nil {
			return err // stopped during the first attempt
		}
	}
	logServing(log, cfg, lns)
	serving := frontend.Serve(ctx, cfg.Durations.ShutdownDrain, cancel, fronts...)

	<-ctx.Done()
	begun := time.Now()
	stopLayoutCheck()
	_, err = frontend.Stop{
		Timeout: cfg.Durations.ShutdownTimeout, Drain: cfg.Durations.ShutdownDrain,
		Served: serving.Done(), Cut: serving.Cut, HandBack: handBack(alloc, keeper, source), Log: log,
	}.Run(begun)
	if err != nil {
		log.Error("shutdown", "err", err)
	}
	log.Info("idalloc stopped", "took", time.Since(begun).Round(time.Millisecond))
	if cause := context.Cause(ctx); !errors.Is(cause, frontend.ErrStopSignal) {
		return cause
	}
	return nil
}
