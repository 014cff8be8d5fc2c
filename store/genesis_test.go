package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// TestGenesis: a table idalloc created empty tells a new worker ID from a
// forgotten one by its genesis row, until the row goes with the others, or
// advance removes it, or the table was made by hand (no row at all).
func TestGenesis(t *testing.T) {
	tests := []struct {
		name      string
		stmts     []string // run on the fresh database before the grant
		advance   bool     // idalloc advance first
		noHistory bool
	}{
		{"created by idalloc", nil, false, false},
		{"its rows deleted", []string{"DELETE FROM worker_leases"}, false, true},
		{"made by hand from schema.sql", []string{"DELETE FROM worker_leases WHERE cluster = ''"}, false, true},
		{"after idalloc advance", nil, true, true},
	}
	for _, d := range storetest.Drivers() {
		for _, tt := range tests {
			t.Run(d.Name+"/"+tt.name, func(t *testing.T) {
				db := d.NewDB(t)
				db.Exec(t, tt.stmts...)
				st := db.Open(t)
				if tt.advance {
					adv := st.(interface {
						AdvanceLeases(context.Context, int64, bool, func(string, int64, int64, int64)) error
					})
					if err := adv.AdvanceLeases(t.Context(), time.Now().UnixMilli(), false, func(string, int64, int64, int64) {}); err != nil {
						t.Fatalf("AdvanceLeases: %v", err)
					}
				}
				l, err := st.Acquire(t.Context(), workerlease.AcquireRequest{
					Cluster: "c", MaxWorkerID: 7, Token: "token-a", TTL: time.Minute, NowMS: time.Now().UnixMilli()})
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				if l.NoHistory != tt.noHistory {
					t.Errorf("first grant: NoHistory %v, want %v", l.NoHistory, tt.noHistory)
				}
			})
		}
	}
}
