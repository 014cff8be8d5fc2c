// Command idalloc serves segment (Leaf-style) and snowflake IDs over HTTP.
// main only wires: it loads the config, opens the store, builds the segment
// allocator, the worker lease keeper and snowflake source, and the server,
// serves until SIGTERM/SIGINT, then drains and hands back what it holds.
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// closeTimeout bounds each hand-back after the drain: releasing the lease,
// and giving back unused segment IDs.
const closeTimeout = 10 * time.Second

// gcPercent replaces Go's default GOGC of 100 unless GOGC is set. idalloc's
// live heap is under a few MB, so at 100 the collector runs every ~4 MB
// allocated: over 60 times a second at 80k req/s on one core, about 4% of
// the CPU and a pause in every request in flight. At 400 it runs a quarter as
// often for ~12 MB more memory.
const gcPercent = 400

func main() {
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		if err := migrateMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "idalloc migrate:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "idalloc:", err)
		os.Exit(1)
	}
}

// dataStore is what a store driver provides to main.
type dataStore interface {
	segment.Store
	workerlease.Store
	leaseHistory
	ObserveConflicts(func(op string))
	Close() error
}

func openStore(ctx context.Context, driver, dsn string, initSchema bool) (dataStore, error) {
	switch driver {
	case "mysql":
		return store.OpenMySQL(ctx, dsn, store.MySQLOptions{InitSchema: initSchema})
	case "sqlite":
		return store.OpenSQLite(ctx, dsn)
	}
	return nil, fmt.Errorf("unknown driver %q", driver)
}

func run(args []string) error {
	fs := flag.NewFlagSet("idalloc", flag.ContinueOnError)
	configPath := fs.String("config", "config.json", "config file (JSON)")
	initSchema := fs.Bool("init-schema", false, "apply schema.sql to the MySQL database before serving")
	if err := fs.Parse(args); err != nil {
		return err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := loadConfig(*configPath, explicit, os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Listen first: a taken port fails before a lease or a segment is held.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return err
	}
	defer ln.Close()

	st, err := openStore(ctx, cfg.Driver, cfg.DSN, *initSchema)
	if err != nil {
		return fmt.Errorf("open %s store: %w", cfg.Driver, err)
	}
	defer st.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := server.NewMetrics(reg)
	if err != nil {
		return err
	}
	st.ObserveConflicts(metrics.StoreConflict)

	alloc, err := segment.New(ctx, st, segment.Config{
		MaxStep: cfg.Segment.MaxStep, TagRefresh: cfg.tagRefresh, Observer: metrics, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("load tags: %w", err)
	}

	leases, keeper, source, err := snowflakeParts(st, cfg, log, metrics.DriftWaited)
	if err != nil {
		return err
	}
	deps := server.Deps{Segments: alloc, Store: st, Leases: leases}
	if keeper != nil {
		deps.Snowflake, deps.OwnLease = source, keeper
	}
	srv, err := server.New(server.Config{
		AdminToken: cfg.AdminToken, MaxBatch: cfg.MaxBatch, SegmentMaxStep: cfg.Segment.MaxStep,
		Logger: log, Metrics: metrics, Gatherer: reg,
	}, deps)
	if err != nil {
		return err
	}
	if keeper != nil {
		err := st.CheckLayout(ctx, cfg.Snowflake.Cluster, cfg.epoch.UnixMilli(), cfg.Snowflake.WorkerBits)
		switch {
		case errors.Is(err, workerlease.ErrLayoutMismatch):
			return fmt.Errorf(`keys "snowflake.epoch"/"snowflake.worker_bits": %w`, err)
		case err != nil:
			// A store from before worker_layouts existed: serve, but say so.
			log.Warn("snowflake layout not checked against the cluster; apply schema.sql", "err", err)
		}
		// Not ctx: the lease must stay renewed while the server drains.
		keeper.Start(context.Background())
	}
	log.Info("idalloc serving", "addr", ln.Addr().String(), "driver", cfg.Driver, "snowflake", cfg.Snowflake.Enabled)
	serveErr := srv.Serve(ctx, ln, cfg.shutdownDrain)

	// The server has answered its last request: release the lease with the
	// last timestamp used, then give unused segment IDs back. Each gets its
	// own time, so a store that hangs on one still lets the other try.
	var errs []error
	if keeper != nil {
		errs = append(errs, withTimeout(func(ctx context.Context) error { return keeper.Close(ctx, source.LastTimestampMS()) }))
	}
	errs = append(errs, withTimeout(alloc.Close), srv.Close())
	if err := errors.Join(errs...); err != nil {
		log.Error("shutdown", "err", err)
	}
	log.Info("idalloc stopped")
	return serveErr
}

func withTimeout(f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return f(ctx)
}

// snowflakeParts builds the worker-lease service (always: other processes
// lease worker IDs through it) and, when snowflake mode is on, this
// instance's keeper and fenced source.
func snowflakeParts(st workerlease.Store, cfg settings, log *slog.Logger, onDriftWait func(time.Duration)) (*workerlease.Service, *workerlease.Keeper, *workerlease.Source, error) {
	sf := cfg.Snowflake
	layout, err := snowflake.NewLayout(cfg.epoch, sf.WorkerBits)
	if err != nil {
		return nil, nil, nil, fmt.Errorf(`key "snowflake.worker_bits"/"snowflake.epoch": %w`, err)
	}
	host, _ := os.Hostname()
	svc, err := workerlease.NewService(st, workerlease.Config{
		Cluster: sf.Cluster, MaxWorkerID: layout.MaxWorkerID(), TTL: cfg.leaseTTL,
		Holder: fmt.Sprintf("%s:%d", host, os.Getpid()),
	})
	if err != nil || !sf.Enabled {
		return svc, nil, nil, err
	}
	keeper, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc, Logger: log})
	if err != nil {
		return nil, nil, nil, err
	}
	source, err := workerlease.NewSource(keeper, snowflake.Settings{
		Epoch: cfg.epoch, WorkerBits: sf.WorkerBits, DisableRandomStart: !cfg.randomStart,
		MaxDriftBlock: cfg.driftBlock, MaxDriftError: cfg.driftError, OnDriftWait: onDriftWait,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("snowflake settings: %w", err)
	}
	return svc, keeper, source, nil
}
