package store_test

import (
	"testing"

	"github.com/idalloc/idalloc/snowflake/leased/layouttest"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

func TestSQLite(t *testing.T) { storetest.Run(t, storetest.SQLite()) }

// TestMySQL needs IDALLOC_TEST_MYSQL_DSN or a Docker engine; see storetest.
func TestMySQL(t *testing.T) { storetest.Run(t, storetest.MySQL()) }

// TestSQLiteLeases and TestMySQLLeases run workerlease's conformance suite,
// which every lease store passes (memory, SQL, Redis, etcd), and the one
// of the snowflake layouts kept beside the leases.
func TestSQLiteLeases(t *testing.T) {
	tg := storetest.LeaseTarget(storetest.SQLite())
	leasetest.Run(t, tg)
	layouttest.Run(t, tg)
}

func TestMySQLLeases(t *testing.T) {
	tg := storetest.LeaseTarget(storetest.MySQL())
	leasetest.Run(t, tg)
	layouttest.Run(t, tg)
}
