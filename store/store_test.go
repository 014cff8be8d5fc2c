package store_test

import (
	"testing"

	"github.com/idalloc/idalloc/internal/layouttest"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

// TestConformance runs the store's conformance suite on every driver of
// storetest.Drivers, a subtest each. MySQL needs IDALLOC_TEST_MYSQL_DSN or
// a Docker engine, PostgreSQL IDALLOC_TEST_POSTGRES_DSN; see storetest.
func TestConformance(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) { storetest.Run(t, d) })
	}
}

// TestLeases runs workerlease's conformance suite, which every lease store
// passes (memory, SQL, Redis, etcd), and snowflake/leased's suite of the
// layouts kept beside the leases, on every driver.
func TestLeases(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := storetest.LeaseTarget(d)
			leasetest.Run(t, tg)
			layouttest.Run(t, tg)
		})
	}
}
