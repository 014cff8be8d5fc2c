// Package leasestore opens the worker-lease store a config's lease.driver
// names: the main SQL store, or a Redis or etcd of its own. It is the one
// table of them (Drivers): main's start and idalloc advance (ForAdvance)
// open a lease store through it, and package config checks lease.driver against the
// same names (package drivers).
package leasestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idalloc/idalloc/advance"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/etcdlease"
	"github.com/idalloc/idalloc/redislease"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// Main is what the main store (package store's) is as a lease store.
type Main interface {
	workerlease.Store
	leased.LayoutRecorder
	advance.Leases
}

// Store is an open lease store: where leases are kept, where snowflake
// layouts are recorded, and how idalloc advance raises its leases.
type Store struct {
	workerlease.Store
	Layouts leased.LayoutRecorder
	Advance advance.Leases
	// persistence says whether the store keeps leases across its own
	// restart (redislease.CheckPersistence); nil when there is nothing to
	// ask.
	persistence func(context.Context) error
	close       func()
}

// Close closes what Open opened: nothing for the main store's leases.
func (s Store) Close() { s.close() }

// Drivers opens each lease.driver's store on its dsn (drivers.Lease).
// None is dialled here: a lease store that is down at start is an outage
// the keeper retries, as the main store's is, not a reason to refuse
// segment IDs.
var Drivers = map[string]func(main Main, dsn string) (Store, error){
	drivers.LeaseSQL: func(main Main, _ string) (Store, error) {
		return Store{Store: main, Layouts: main, Advance: main, close: func() {}}, nil
	},
	drivers.Redis: func(_ Main, dsn string) (Store, error) {
		st, err := redislease.Open(dsn, redislease.Options{})
		if err != nil {
			return Store{}, err
		}
		return Store{Store: st, Layouts: st, Advance: st, persistence: st.CheckPersistence, close: func() { st.Close() }}, nil
	},
	drivers.Etcd: func(_ Main, dsn string) (Store, error) {
		st, err := etcdlease.Open(dsn, etcdlease.Options{})
		if err != nil {
			return Store{}, err
		}
		return Store{Store: st, Layouts: st, Advance: st, close: func() { st.Close() }}, nil
	},
}

// Open opens the lease store driver names at dsn, main's for "sql". Its
// errors name the config's key at fault.
func Open(main Main, driver, dsn string) (Store, error) {
	open, ok := Drivers[driver]
	if !ok {
		return Store{}, fmt.Errorf(`key "lease.driver": unknown lease store %q`, driver)
	}
	st, err := open(main, dsn)
	if err != nil {
		return Store{}, fmt.Errorf(`key "lease.dsn": %w`, err)
	}
	return st, nil
}

// ForAdvance opens the lease store c names for idalloc advance (a
// cmd.OpenLeases): the one the server would use, opened as for the server.
func ForAdvance(main store.Store, c config.LeaseConfig) (advance.Leases, func(), error) {
	st, err := Open(main, c.Driver, c.DSN)
	if err != nil {
		return nil, nil, err
	}
	return st.Advance, st.Close, nil
}

// WarnPersistence logs, at start, a lease store that keeps nothing across
// its restart, or that would not say (docs/api.md §3). Leases stay safe
// either way; the warning names the risk (a wait after every loss, and a
// replica or snapshot that needs idalloc advance) and the fix.
func (s Store) WarnPersistence(ctx context.Context, log *slog.Logger) {
	if s.persistence == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	switch err := s.persistence(ctx); {
	case errors.Is(err, redislease.ErrNotPersistent), errors.Is(err, redislease.ErrPersistenceUnknown):
		log.Warn("lease store: " + err.Error())
	case err != nil:
		log.Warn("lease store: could not check whether Redis keeps leases on disk", "err", err)
	}
}
