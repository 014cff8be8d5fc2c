package store_test

import (
	"testing"

	"github.com/idalloc/idalloc/store/storetest"
)

func TestSQLite(t *testing.T) { storetest.Run(t, storetest.SQLite()) }

// TestMySQL needs IDALLOC_TEST_MYSQL_DSN or a Docker engine; see storetest.
func TestMySQL(t *testing.T) { storetest.Run(t, storetest.MySQL()) }
