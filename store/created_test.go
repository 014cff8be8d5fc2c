package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestCreated: a handle says it created the lease table only when it did,
// the one case in which a grant with no history may skip the wait for a
// forgotten holder (workerlease.Config.StoreCreated).
func TestCreated(t *testing.T) {
	ctx := context.Background()
	type created interface {
		Created() bool
		Close() error
	}
	sqlitePath := filepath.Join(t.TempDir(), "new.db")
	var mysqlDSN string
	tests := []struct {
		name  string
		setup func(t *testing.T)
		open  func() (created, error)
		want  []bool // first open, second open
	}{
		{"sqlite file made here", nil, func() (created, error) { return store.OpenSQLite(ctx, sqlitePath) }, []bool{true, false}},
		{"mysql tables made by -init-schema", func(t *testing.T) { mysqlDSN = storetest.MySQLDSN(t) },
			func() (created, error) {
				return store.OpenMySQL(ctx, mysqlDSN, store.MySQLOptions{InitSchema: true})
			}, []bool{true, false}},
		{"mysql without -init-schema", func(t *testing.T) { mysqlDSN = storetest.MySQL().NewDB(t).DSN },
			func() (created, error) {
				return store.OpenMySQL(ctx, mysqlDSN, store.MySQLOptions{})
			}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup(t)
			}
			for i, want := range tt.want {
				st, err := tt.open()
				if err != nil {
					t.Fatalf("open %d: %v", i+1, err)
				}
				if got := st.Created(); got != want {
					t.Errorf("open %d: Created() = %v, want %v", i+1, got, want)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
