package drivers_test

import (
	"testing"

	"github.com/idalloc/idalloc/drivers"
)

func TestLists(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{drivers.Or(nil), ""},
		{drivers.Or([]string{"a"}), "a"},
		{drivers.Or([]string{"a", "b"}), "a or b"},
		{drivers.Or(drivers.SQL()), "sqlite, mysql or postgres"},
		{drivers.Quoted(drivers.SQL()), `"sqlite", "mysql" or "postgres"`},
		{drivers.Quoted(drivers.Lease()), `"sql", "redis" or "etcd"`},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
