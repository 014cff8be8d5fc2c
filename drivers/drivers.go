// Package drivers names the stores a config may choose: the SQL engines
// of the key "driver" and the lease stores of "lease.driver". It imports
// nothing, so that package config checks a name against the same list
// the registries are held to (store.Drivers, main's lease stores), though
// it may import neither.
package drivers

import (
	"strconv"
	"strings"
)

// The SQL engines, each one entry of store.Drivers.
const (
	SQLite   = "sqlite"
	MySQL    = "mysql"
	Postgres = "postgres"
)

// The lease stores: the main store's engine, Redis and etcd.
const (
	LeaseSQL = "sql"
	Redis    = "redis"
	Etcd     = "etcd"
)

// SQL lists the SQL engines in the order the config's errors and help
// name them.
func SQL() []string { return []string{SQLite, MySQL, Postgres} }

// Lease lists the lease stores in the order the config's errors name
// them.
func Lease() []string { return []string{LeaseSQL, Redis, Etcd} }

// Or joins names as a sentence lists them: "a, b or c".
func Or(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Quoted joins names quoted, as the config's errors list them:
// "a", "b" or "c".
func Quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return Or(q)
}
