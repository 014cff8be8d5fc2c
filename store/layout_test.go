package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestCheckLayoutNamesMissingTable: on a database without worker_layouts
// (made before it), CheckLayout's error is ErrMissingTables naming the
// table and its fix, which the layout gate logs as it is: retrying alone
// would never cure it.
func TestCheckLayoutNamesMissingTable(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.NewDB(t)
			st := db.Open(t)
			db.Exec(t, "DROP TABLE worker_layouts")
			err := st.CheckLayout(t.Context(), "c", 1_767_225_600_000, 10)
			if !errors.Is(err, store.ErrMissingTables) {
				t.Fatalf("CheckLayout without worker_layouts = %v, want %v", err, store.ErrMissingTables)
			}
			if msg := err.Error(); !strings.Contains(msg, "worker_layouts") || !strings.Contains(msg, "-init-schema") {
				t.Errorf("CheckLayout without worker_layouts = %q, want it to name worker_layouts and -init-schema", msg)
			}
		})
	}
}
