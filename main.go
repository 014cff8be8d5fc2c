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
	"time"

	"github.com/idalloc/idalloc/buildinfo"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/gcpace"
	"github.com/idalloc/idalloc/leasestore"
	"github.com/idalloc/idalloc/migrate"
)

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

// migrateMain and advanceMain run the tools (package migrate) on this
// process's output and environment; advance gets the lease stores through
// main (leasestore), as the tools import no lease adapter.
func migrateMain(args []string) error { return migrate.Migrate(args, os.Stdout, os.Stderr) }

func advanceMain(args []string) error {
	return migrate.Advance(args, os.Stdout, os.Stderr, os.Environ(), leasestore.ForAdvance)
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
		fmt.Println(buildinfo.Read(version, revision))
		return nil
	}
	cfg, err := config.Load(flags.ConfigPath, flags.ConfigRequired, os.Environ())
	if err != nil {
		return err
	}
	if flags.PrintConfig {
		return cfg.PrintEffective(os.Stdout)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if os.Getenv("GOGC") == "" {
		defer gcpace.Start()()
	}

	// ctx ends at the first SIGINT/SIGTERM (cause frontend.ErrStopSignal),
	// or when the instance must stop for another reason (a layout mismatch
	// found in the background, a front end failing), with that reason as
	// cause.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	defer frontend.WatchSignals(ctx, cancel, cfg.ShutdownTimeout.Duration(), log)()

	// Listen first: a taken port fails before a lease or a segment is held.
	lns, err := frontend.Listen(addrs(cfg)...) // frontends.go
	if err != nil {
		return err
	}
	defer lns.Close() // if the start fails before they are served
	p, closeParts, err := buildParts(ctx, cfg, flags.InitSchema, log)
	defer closeParts()
	if err != nil {
		return err
	}
	fronts, srv, err := frontEnds(cfg, lns, p)
	if err != nil {
		return err
	}
	defer srv.Close()
	stopGate, err := gateSnowflake(ctx, cancel, cfg, p)
	if err != nil {
		return err
	}
	logServing(log, cfg, lns)
	serving := frontend.Serve(ctx, cfg.ShutdownDrain.Duration(), cancel, fronts...)

	<-ctx.Done()
	begun := time.Now()
	stopGate()
	_, err = frontend.Stop{
		Timeout: cfg.ShutdownTimeout.Duration(), Drain: cfg.ShutdownDrain.Duration(),
		Served: serving.Done(), Cut: serving.Cut, HandBack: handBack(p.alloc, p.keeper, p.source), Log: log,
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
