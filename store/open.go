package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/workerlease"
)

var (
	_ Store = (*MySQL)(nil)
	_ Store = (*SQLite)(nil)
	_ Store = (*Postgres)(nil)
)

// Store is what Open returns, whichever driver it names: the segment
// store with the period counters of dated tags and the record of the
// region it serves, the lease store, the
// access tokens and audit log, the record of each cluster's snowflake
// layout, and what idalloc migrate and advance move. Every driver of this
// package is one.
type Store interface {
	segment.Store
	segment.PeriodStore
	segment.RegionStore
	workerlease.Store
	access.Store
	// CheckLayout records cluster's snowflake layout on first use and
	// refuses another with snowflake.ErrLayoutMismatch.
	CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error
	Layouts(ctx context.Context) ([]ClusterLayout, error)
	LeaseTimestamps(ctx context.Context) ([]LeaseTimestamp, error)
	RaiseLeaseTimestamp(ctx context.Context, lt LeaseTimestamp) error
	Periods(ctx context.Context) ([]PeriodCounter, error)
	RaisePeriod(ctx context.Context, pc PeriodCounter) error
	AdvanceTag(ctx context.Context, tag string, by int64) (from, to int64, err error)
	AdvancePeriod(ctx context.Context, tag string, stamp, start, limit, by int64) (from, to int64, err error)
	AdvanceLeases(ctx context.Context, toMS int64, dryRun bool, each func(cluster string, workerID, fromMS, toMS int64)) error
	ObserveConflicts(fn func(op string))
	Close() error
}

// Options tunes Open.
type Options struct {
	// InitSchema prepares a MySQL or PostgreSQL database before Open
	// returns (see MySQLOptions.InitSchema); SQLite creates what is missing
	// on its own.
	InitSchema bool
	// Report, if set, is told each change InitSchema makes (see
	// MySQLOptions.Report).
	Report func(change string)
}

// Open opens the store driver names at dsn: "mysql" (OpenMySQL),
// "postgres" (OpenPostgres) or "sqlite" (OpenSQLite). It is the one place that maps a config's driver
// to its store, for the server's start and the tools alike, so a new
// driver is one more case here. Errors: an unknown driver, or the
// driver's own open errors.
func Open(ctx context.Context, driver, dsn string, opts Options) (Store, error) {
	// Each case returns a nil Store on error, never a nil *MySQL in one.
	switch driver {
	case "mysql":
		m, err := OpenMySQL(ctx, dsn, MySQLOptions{InitSchema: opts.InitSchema, Report: opts.Report})
		if err != nil {
			return nil, err
		}
		return m, nil
	case "postgres":
		p, err := OpenPostgres(ctx, dsn, PostgresOptions{InitSchema: opts.InitSchema, Report: opts.Report})
		if err != nil {
			return nil, err
		}
		return p, nil
	case "sqlite":
		s, err := OpenSQLite(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown driver %q", driver)
}

// OpenError explains err, from opening driver's store, as the server's
// start and idalloc advance report it. Refused credentials and a database
// without idalloc's tables (not yet prepared, or not the one meant) are
// fixed where the dsn was set, so they name dsnFrom, that place (an
// environment variable, or a config file and key). MySQL's and
// PostgreSQL's other errors name the server and database already ("open
// mysql host/db"); SQLite's get the driver's name.
func OpenError(driver, dsnFrom string, err error) error {
	switch {
	case errors.Is(err, ErrAccessDenied):
		return fmt.Errorf("%s: %w; correct the user or password there", dsnFrom, err)
	case errors.Is(err, ErrMissingTables):
		return fmt.Errorf("%s: %w", dsnFrom, err)
	case driver != "sqlite":
		return err
	}
	return fmt.Errorf("open %s store: %w", driver, err)
}
