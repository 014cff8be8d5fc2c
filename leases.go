package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/leasestore"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// snowflakeParts builds the worker-lease service (always: other processes
// lease worker IDs through it) and, when snowflake mode is on, this
// instance's keeper and the source that fences each ID by its session,
// whose generators tell obs of the IDs they issue and the drifts they meet.
func snowflakeParts(st leasestore.Store, cfg config.Settings, log *slog.Logger, obs snowflake.Observer) (*workerlease.Service, *workerlease.Keeper, *leased.Source, error) {
	sf := cfg.Snowflake
	// Validated once, here, with the 10-year rule of a new deployment; every
	// generator built later, for each new lease, takes it as it is.
	layout := cfg.Layout
	if err := layout.CheckLifetime(time.Now()); err != nil {
		return nil, nil, nil, fmt.Errorf(`key "snowflake.worker_bits"/"snowflake.epoch": %w`, err)
	}
	region, err := leased.NewRegion(layout, cfg.Region.Count, cfg.Region.ID)
	if err != nil {
		return nil, nil, nil, fmt.Errorf(`keys "region.count"/"snowflake.worker_bits": %w`, err)
	}
	if region.Split() {
		log.Info("snowflake worker IDs of this region: the lease store grants 0..n−1, IDs carry first + the lease's",
			"first", region.First, "n", region.N)
	}
	host, _ := os.Hostname()
	svc, err := workerlease.NewService(st.Store, workerlease.Config{
		Cluster: sf.Cluster, MaxWorkerID: region.N - 1, TTL: cfg.Snowflake.LeaseTTL.Duration(),
		Holder: fmt.Sprintf("%s:%d", host, os.Getpid()),
	})
	if err != nil || !sf.Enabled {
		return svc, nil, nil, err
	}
	// Two holders' clocks may disagree by up to max_drift_error before a
	// generator refuses to go on: the wait after a grant with no history
	// covers that much more than the TTL.
	keeper, err := workerlease.NewKeeper(workerlease.KeeperConfig{
		Service: svc, Logger: log, ClockSkew: cfg.Snowflake.MaxDriftError.Duration(),
		CheckLayout: leased.CheckEachLease(st.Layouts, layout, log),
	})
	if err != nil {
		return nil, nil, nil, err
	}
	source, err := leased.New(keeper, layout, snowflake.Settings{
		WorkerID: region.First, DisableRandomStart: !cfg.RandomStart,
		MaxDriftBlock: cfg.Snowflake.MaxDriftBlock.Duration(), MaxDriftError: cfg.Snowflake.MaxDriftError.Duration(), Observer: obs,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return svc, keeper, source, nil
}
