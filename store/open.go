package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// ErrInvalidDSN is the error of a dsn its driver cannot read, or one of
// another driver's form: the error names the driver and the form its dsn
// takes (dsnForms), never the dsn itself, which may hold a password.
var ErrInvalidDSN = errors.New("malformed dsn")

// ErrUnknownDatabase is OpenMySQL's and OpenPostgres's error when the
// server has no database of the dsn's name (MySQL error 1049, PostgreSQL's
// SQLSTATE 3D000): the error names it and the statement that creates it.
// Not a fault a restart cures.
var ErrUnknownDatabase = errors.New("the database does not exist")

// dsnError is ErrInvalidDSN for driver, with why (the driver's own words,
// which never quote the password) and the form its dsn takes.
func dsnError(driver, why string) error {
	d, _ := DriverNamed(driver)
	return fmt.Errorf("%w for %s (%s); the form is %s", ErrInvalidDSN, driver, why, d.Form)
}

// unknownDatabase is ErrUnknownDatabase with the statement that creates
// the database, whose name quoted is as its server quotes an identifier.
func unknownDatabase(quoted string) error {
	return fmt.Errorf("%w: create it (CREATE DATABASE %s), then -init-schema creates idalloc's tables in it; "+
		"or correct the database's name in the dsn", ErrUnknownDatabase, quoted)
}

// formOf names the driver whose form dsn has when that is plain from the
// dsn (mysql's "@tcp(" or "@unix(", a postgres:// URL); "" when it is not.
func formOf(dsn string) string {
	lower := strings.ToLower(dsn)
	for _, d := range Drivers() {
		if d.hasForm != nil && d.hasForm(lower) {
			return d.Name
		}
	}
	return ""
}

// Open opens the store driver names at dsn (Drivers), for the server's
// start and the tools alike. Errors: an unknown driver, ErrInvalidDSN for
// a dsn of another driver's form (a SQLite file would be made of a MySQL
// DSN, password and all), or the driver's own open errors.
func Open(ctx context.Context, driver, dsn string, opts Options) (Store, error) {
	d, ok := DriverNamed(driver)
	if !ok {
		return nil, unknownDriver(driver)
	}
	if other := formOf(dsn); other != "" && other != driver {
		return nil, dsnError(driver, "it has the form of a "+other+" dsn; set the driver to "+other+", or give a "+driver+" dsn")
	}
	return d.Open(ctx, dsn, opts)
}

// OpenError explains err, from opening driver's store, as the server's
// start and idalloc advance report it. Refused credentials, a malformed
// dsn, a database that does not exist and one without idalloc's tables
// (not yet prepared, or not the one meant) are fixed where the dsn was
// set, so they name dsnFrom, that place (an environment variable, or a
// config file and key), as does any error of SQLite's, whose dsn is the
// file. MySQL's and PostgreSQL's other errors name the server and
// database already ("open mysql host/db").
func OpenError(driver, dsnFrom string, err error) error {
	switch {
	case errors.Is(err, ErrAccessDenied):
		return fmt.Errorf("%s: %w; correct the user or password there", dsnFrom, err)
	case errors.Is(err, ErrMissingTables) || errors.Is(err, ErrInvalidDSN) || errors.Is(err, ErrUnknownDatabase):
		return fmt.Errorf("%s: %w", dsnFrom, err)
	case !isEmbedded(driver):
		return err
	}
	return fmt.Errorf("%s: open %s store: %w", dsnFrom, driver, err)
}

// isEmbedded reports whether driver names an engine whose database is a
// file (Driver.Embedded).
func isEmbedded(driver string) bool {
	d, _ := DriverNamed(driver)
	return d.Embedded
}

// NeedsOperator reports whether err, from Open, is one that starting
// again does not cure: the dsn, the credentials, the database or its
// tables must be corrected first. Other errors (a server that does not
// answer) may pass.
func NeedsOperator(err error) bool {
	for _, e := range []error{ErrAccessDenied, ErrInvalidDSN, ErrUnknownDatabase, ErrMissingTables, ErrOutdatedSchema} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
