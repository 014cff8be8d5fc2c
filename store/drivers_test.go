package store_test

import (
	"slices"
	"testing"

	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestDriversAreTheConfigsNames: the engines of store.Drivers are the
// names the config accepts (package drivers), each with everything the
// start and the tools call, and storetest runs each.
func TestDriversAreTheConfigsNames(t *testing.T) {
	var names, tested []string
	for _, d := range store.Drivers() {
		names = append(names, d.Name)
		if d.Form == "" || d.Open == nil || d.OpenReadOnly == nil {
			t.Errorf("%s: an entry without a dsn form, Open or OpenReadOnly", d.Name)
		}
		if got, ok := store.DriverNamed(d.Name); !ok || got.Name != d.Name {
			t.Errorf("DriverNamed(%q) = %q, %v", d.Name, got.Name, ok)
		}
	}
	for _, d := range storetest.Drivers() {
		tested = append(tested, d.Name)
	}
	want := slices.Sorted(slices.Values(drivers.SQL()))
	if got := slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Errorf("store.Drivers %v, the config's names %v", got, want)
	}
	if got := slices.Sorted(slices.Values(tested)); !slices.Equal(got, want) {
		t.Errorf("storetest.Drivers %v, the config's names %v", got, want)
	}
}
