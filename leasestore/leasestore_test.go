package leasestore_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/leasestore"
)

// TestDriversAreTheConfigsNames: the lease stores Open knows are the names
// the config accepts for lease.driver.
func TestDriversAreTheConfigsNames(t *testing.T) {
	got := slices.Sorted(maps.Keys(leasestore.Drivers))
	if want := slices.Sorted(slices.Values(drivers.Lease())); !slices.Equal(got, want) {
		t.Errorf("leasestore.Drivers %v, the config's names %v", got, want)
	}
}
