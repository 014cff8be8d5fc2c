package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/etcdlease"
	"github.com/idalloc/idalloc/migrate"
	"github.com/idalloc/idalloc/redislease"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// openLeaseStore returns where worker-ID leases are kept (lease.driver):
// the main store, or a Redis or etcd of their own. Neither is dialled here:
// a lease store that is down at start is an outage the keeper retries, as
// the main store's is, not a reason to refuse segment IDs.
func openLeaseStore(main dataStore, c config.LeaseConfig) (leaseStore, func(), error) {
	switch c.Driver {
	case "redis":
		st, err := redislease.Open(c.DSN, redislease.Options{})
		if err != nil {
			return leaseStore{}, nil, fmt.Errorf(`key "lease.dsn": %w`, err)
		}
		return leaseStore{Store: st, layout: st, persistence: st.CheckPersistence}, func() { st.Close() }, nil
	case "etcd":
		st, err := etcdlease.Open(c.DSN, etcdlease.Options{})
		if err != nil {
			return leaseStore{}, nil, fmt.Errorf(`key "lease.dsn": %w`, err)
		}
		return leaseStore{Store: st, layout: st}, func() { st.Close() }, nil
	}
	return leaseStore{Store: main, layout: main}, func() {}, nil
}

// Every lease store openLeaseStore opens can be advanced, as
// advanceLeases asserts.
var (
	_ migrate.Leases = store.Store(nil)
	_ migrate.Leases = (*redislease.Store)(nil)
	_ migrate.Leases = (*etcdlease.Store)(nil)
)

// advanceLeases is idalloc advance's way to the lease store (a
// cmd.OpenLeases): the one the server would use, opened as for the
// server, since the adapters are main's to import.
func advanceLeases(st store.Store, c config.LeaseConfig) (migrate.Leases, func(), error) {
	ls, closeLeases, err := openLeaseStore(st, c)
	if err != nil {
		return nil, nil, err
	}
	return ls.Store.(migrate.Leases), closeLeases, nil
}

// leaseStore is the lease store, where it records snowflake layouts, and
// how to ask whether it keeps leases across its own restart.
type leaseStore struct {
	workerlease.Store
	layout leased.LayoutRecorder
	// persistence says whether the store keeps leases across its own
	// restart (redislease.Store.CheckPersistence); nil when there is nothing to
	// ask.
	persistence func(context.Context) error
}

// warnPersistence logs, at start, a lease store that keeps nothing across
// its restart, or that would not say (docs/api.md §3). Leases stay safe either
// way; the warning names the risk (a wait after every loss, and a replica
// or snapshot that needs idalloc advance) and the fix.
func (ls leaseStore) warnPersistence(ctx context.Context, log *slog.Logger) {
	if ls.persistence == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	switch err := ls.persistence(ctx); {
	case errors.Is(err, redislease.ErrNotPersistent), errors.Is(err, redislease.ErrPersistenceUnknown):
		log.Warn("lease store: " + err.Error())
	case err != nil:
		log.Warn("lease store: could not check whether Redis keeps leases on disk", "err", err)
	}
}

// snowflakeParts builds the worker-lease service (always: other processes
// lease worker IDs through it) and, when snowflake mode is on, this
// instance's keeper and the source that fences each ID by its session,
// whose generators tell obs of the IDs they issue and the drifts they meet.
func snowflakeParts(st leaseStore, cfg config.Settings, log *slog.Logger, obs snowflake.Observer) (*workerlease.Service, *workerlease.Keeper, *leased.Source, error) {
	sf := cfg.Snowflake
	// Validated once, here, with the 10-year rule of a new deployment
	// (package config refused a bad one by key already); every generator built
	// later, for each new lease, takes it as it is.
	layout, err := snowflake.NewLayout(cfg.Epoch, sf.WorkerBits)
	if err == nil {
		err = layout.CheckLifetime(time.Now())
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf(`key "snowflake.worker_bits"/"snowflake.epoch": %w`, err)
	}
	// In one region of several the lease store grants the region's share
	// of the worker IDs, 0..n−1, and the generators add the region's
	// first (docs/api.md §13): regions never share a worker ID, though each
	// leases from a store of its own.
	first, n, err := layout.RegionWorkerIDs(cfg.Region.Count, cfg.Region.ID)
	if err != nil {
		return nil, nil, nil, fmt.Errorf(`keys "region.count"/"snowflake.worker_bits": %w`, err)
	}
	if first > 0 || n <= layout.MaxWorkerID() {
		log.Info("snowflake worker IDs of this region: the lease store grants 0..n−1, IDs carry first + the lease's",
			"first", first, "n", n)
	}
	host, _ := os.Hostname()
	svc, err := workerlease.NewService(st.Store, workerlease.Config{
		Cluster: sf.Cluster, MaxWorkerID: n - 1, TTL: cfg.Snowflake.LeaseTTL.Duration(),
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
		CheckLayout: leased.CheckEachLease(st.layout, layout, log),
	})
	if err != nil {
		return nil, nil, nil, err
	}
	source, err := leased.New(keeper, layout, snowflake.Settings{
		WorkerID: first, DisableRandomStart: !cfg.RandomStart,
		MaxDriftBlock: cfg.Snowflake.MaxDriftBlock.Duration(), MaxDriftError: cfg.Snowflake.MaxDriftError.Duration(), Observer: obs,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return svc, keeper, source, nil
}
