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
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/migrate/cmd"
	"github.com/idalloc/idalloc/resp"
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

	// ctx ends at the first SIGINT/SIGTERM (cause errStopSignal), or when
	// the instance must stop for another reason (a layout mismatch found in
	// the background, the listener failing), with that reason as cause.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go watchStop(ctx, cancel, sigs, cfg.Durations.ShutdownTimeout, os.Exit, log)

	// Listen first: a taken port fails before a lease or a segment is held.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Origin("http_addr"), err)
	}
	conns := limitConns(ln, cfg.MaxConns)
	defer conns.Close()
	var respLn net.Listener
	if cfg.RespAddr != "" {
		if respLn, err = net.Listen("tcp", cfg.RespAddr); err != nil {
			return fmt.Errorf("%s: %w", cfg.Origin("resp_addr"), err)
		}
		defer respLn.Close() // if the start fails before it is served
	}

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
	if err := conns.register(reg); err != nil {
		return err
	}
	st.ObserveConflicts(metrics.StoreConflict)
	var respMetrics *resp.Metrics
	if respLn != nil {
		if respMetrics, err = resp.NewMetrics(reg); err != nil {
			return err
		}
	}

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
	deps := server.Deps{Segments: alloc, Store: st, Leases: leases}
	if keeper != nil {
		deps.Snowflake, deps.OwnLease = source, keeper
	}
	srv, err := server.New(server.Config{
		AdminToken: cfg.AdminToken, MaxBatch: cfg.MaxBatch,
		Logger: log, Metrics: metrics, Gatherer: reg, ConnState: conns.connState,
	}, deps)
	if err != nil {
		return err
	}
	var respSrv *resp.Server
	if respLn != nil {
		respDeps := resp.Deps{Segments: alloc}
		if keeper != nil {
			respDeps.Snowflake = source
		}
		respSrv, err = resp.New(resp.Config{
			AdminToken: cfg.AdminToken, MaxBatch: cfg.MaxBatch,
			MaxConns: cfg.RespMaxConns, IdleTimeout: cfg.Durations.RespIdleTimeout,
			MaxPending: cfg.RespMaxPending, MaxPendingTotal: cfg.RespMaxPendingTotal,
			Version: readBuildStamp().Version, Logger: log, Metrics: respMetrics,
		}, respDeps)
		if err != nil {
			return err
		}
	}
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
	log.Info("idalloc serving", "addr", ln.Addr().String(), "driver", cfg.Driver, "snowflake", cfg.Snowflake.Enabled,
		"max_conns", cfg.MaxConns)
	httpServed := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, conns, cfg.Durations.ShutdownDrain)
		if err != nil {
			cancel(fmt.Errorf("serve http: %w", err))
		}
		httpServed <- err
	}()
	respServed := make(chan error, 1)
	if respSrv != nil {
		log.Info("idalloc serving the Redis protocol", "addr", respLn.Addr().String(),
			"resp_max_conns", cfg.RespMaxConns, "resp_idle_timeout", cfg.Durations.RespIdleTimeout)
		go func() {
			err := respSrv.Serve(ctx, respLn, cfg.Durations.ShutdownDrain)
			if err != nil {
				cancel(fmt.Errorf("serve resp: %w", err))
			}
			respServed <- err
		}()
	} else {
		respServed <- nil
	}
	// Both front ends drain side by side; the stop goes on once both have
	// answered their last command.
	served := make(chan error, 1)
	go func() { served <- errors.Join(<-httpServed, <-respServed) }()
	cutConns := conns.closeAll
	if respSrv != nil {
		cutConns = func() { conns.closeAll(); respSrv.Cut() }
	}

	<-ctx.Done()
	begun := time.Now()
	stopLayoutCheck()
	// Once the server has answered its last request: release the lease
	// with the last timestamp used, and give unused segment IDs back.
	handBack := []func(context.Context) error{alloc.Close}
	if keeper != nil {
		handBack = append(handBack, func(ctx context.Context) error { return keeper.Close(ctx, source.LastTimestampMS()) })
	}
	_, err = stopper{
		timeout: cfg.Durations.ShutdownTimeout, drain: cfg.Durations.ShutdownDrain,
		served: served, cutConns: cutConns, handBack: handBack, log: log,
	}.run(begun)
	if err := errors.Join(err, srv.Close()); err != nil {
		log.Error("shutdown", "err", err)
	}
	log.Info("idalloc stopped", "took", time.Since(begun).Round(time.Millisecond))
	if cause := context.Cause(ctx); !errors.Is(cause, errStopSignal) {
		return cause
	}
	return nil
}
