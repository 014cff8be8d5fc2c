package store

import (
	"context"
	"fmt"
)

// Driver is one SQL engine, as the config's driver names it: what the
// server's start and the tools need of it. A new engine is its file (a
// dialect, its opener, its entry here) and its schema, and one
// registration in storetest.
type Driver struct {
	// Name is the config's driver key (package drivers).
	Name string
	// Form is the form of its dsn, for the errors that refuse one.
	Form string
	// Embedded says the database is a file this process opens itself:
	// there is no server to wait for or to prepare with -init-schema, and
	// another process must not hold the file (CheckSQLiteFree).
	Embedded bool
	// Open opens its store (Open).
	Open func(ctx context.Context, dsn string, opts Options) (Store, error)
	// OpenReadOnly opens an idalloc database on it for reading only: the
	// source of idalloc migrate.
	OpenReadOnly func(ctx context.Context, dsn string) (*ReadOnly, error)
	// openTinyid opens it read-only for OpenTinyid, whatever tables it
	// has, and names the database for its errors ("" when they name it).
	openTinyid func(ctx context.Context, dsn string) (r *ReadOnly, where string, err error)
	// hasForm reports whether a dsn, lowercased, plainly has this engine's
	// form (formOf); nil when no form is plain.
	hasForm func(lower string) bool
}

// Drivers returns the SQL engines, the servers first as Tinyid ships on
// them. It is the one table of them: Open, OpenTinyid, the config's check
// (through package drivers, whose names it holds) and idalloc migrate
// read it.
func Drivers() []Driver { return []Driver{mysqlDriver(), postgresDriver(), sqliteDriver()} }

// DriverNamed returns the engine the config's driver name names.
func DriverNamed(name string) (Driver, bool) {
	for _, d := range Drivers() {
		if d.Name == name {
			return d, true
		}
	}
	return Driver{}, false
}

// DriverNames returns the engines' names in Drivers' order.
func DriverNames() []string {
	var names []string
	for _, d := range Drivers() {
		names = append(names, d.Name)
	}
	return names
}

// unknownDriver is the error of a name no engine has.
func unknownDriver(name string) error { return fmt.Errorf("unknown driver %q", name) }
