package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/idalloc/idalloc/etcdlease"
	"github.com/idalloc/idalloc/redislease"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// openLeaseStore returns where worker-ID leases are kept (lease.driver):
// the main store, or a Redis or etcd of their own. Neither is dialled here:
// a lease store that is down at start is an outage the keeper retries, as
// the main store's is, not a reason to refuse segment IDs.
func openLeaseStore(main workerlease.Store, c LeaseConfig) (workerlease.Store, func(), error) {
	switch c.Driver {
	case "redis":
		st, err := redislease.Open(c.DSN, redislease.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf(`key "lease.dsn": %w`, err)
		}
		return st, func() { st.Close() }, nil
	case "etcd":
		st, err := etcdlease.Open(c.DSN, etcdlease.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf(`key "lease.dsn": %w`, err)
		}
		return st, func() { st.Close() }, nil
	}
	return main, func() {}, nil
}

// snowflakeParts builds the worker-lease service (always: other processes
// lease worker IDs through it) and, when snowflake mode is on, this
// instance's keeper and the source that fences each ID by its session.
func snowflakeParts(st workerlease.Store, cfg settings, log *slog.Logger, onDriftWait func(time.Duration)) (*workerlease.Service, *workerlease.Keeper, *leased.Source, error) {
	sf := cfg.Snowflake
	// Validated once, here, with the 10-year rule of a new deployment
	// (config.go refused a bad one by key already); every generator built
	// later, for each new lease, takes it as it is.
	layout, err := snowflake.NewLayout(cfg.epoch, sf.WorkerBits)
	if err == nil {
		err = layout.CheckLifetime(time.Now())
	}
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
	source, err := leased.New(keeper, layout, snowflake.Settings{
		DisableRandomStart: !cfg.randomStart,
		MaxDriftBlock:      cfg.driftBlock, MaxDriftError: cfg.driftError, OnDriftWait: onDriftWait,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return svc, keeper, source, nil
}
