package store_test

import (
	"testing"

	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

func TestSQLite(t *testing.T) { storetest.Run(t, storetest.SQLite()) }

// TestMySQL needs IDALLOC_TEST_MYSQL_DSN or a Docker engine; see storetest.
func TestMySQL(t *testing.T) { storetest.Run(t, storetest.MySQL()) }

// TestSQLiteLeases and TestMySQLLeases run workerlease's conformance suite,
// which every lease store passes (memory, SQL, Redis, etcd).
func TestSQLiteLeases(t *testing.T) { leasetest.Run(t, storetest.LeaseTarget(storetest.SQLite())) }

func TestMySQLLeases(t *testing.T) { leasetest.Run(t, storetest.LeaseTarget(storetest.MySQL())) }
