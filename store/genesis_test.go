package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// TestGenesis: a table idalloc created empty tells a new worker ID from a
// forgotten one by its genesis row and the worker IDs' marks, whatever
// scope of rows is lost (every row, one cluster's, one worker ID's), until
// the genesis row goes with the others, or advance removes it, or the
// table was made by hand or by a version that kept no marks.
func TestGenesis(t *testing.T) {
	tests := []struct {
		name    string
		held    int      // worker IDs 0..held-1 of cluster c granted and held first
		stmts   []string // then run
		advance bool     // then idalloc advance
		// NoHistory of the next grants, each of the lowest free ID: the lost
		// ones first, then new ones.
		want []bool
	}{
		{"created by idalloc", 0, nil, false, []bool{false, false}},
		{"its rows deleted", 2, []string{"DELETE FROM worker_leases"}, false, []bool{true, true, true}},
		{"made by hand from schema.sql", 0, []string{"DELETE FROM worker_leases WHERE cluster = ''"}, false, []bool{true}},
		{"made by a version that kept no marks", 0, []string{
			"UPDATE worker_leases SET holder = 'idalloc: created empty; no row lost since' WHERE cluster = ''"}, false, []bool{true}},
		{"after idalloc advance", 1, nil, true, []bool{true}},
		{"one cluster's rows deleted", 2, []string{"DELETE FROM worker_leases WHERE cluster = 'c'"}, false, []bool{true, true, false}},
		{"another cluster's rows deleted", 2, []string{"DELETE FROM worker_leases WHERE cluster = 'd'"}, false, []bool{false}},
		{"one worker ID's row deleted", 3, []string{"DELETE FROM worker_leases WHERE cluster = 'c' AND worker_id = 1"}, false, []bool{true, false}},
		{"the highest worker ID's row deleted", 3, []string{"DELETE FROM worker_leases WHERE cluster = 'c' AND worker_id = 2"}, false, []bool{true, false}},
	}
	for _, d := range storetest.Drivers() {
		for _, tt := range tests {
			t.Run(d.Name+"/"+tt.name, func(t *testing.T) {
				db := d.NewDB(t)
				st := db.Open(t)
				grant := func(n int) workerlease.Lease {
					t.Helper()
					l, err := st.Acquire(t.Context(), workerlease.AcquireRequest{
						Cluster: "c", MaxWorkerID: 7, Token: fmt.Sprintf("token-%d", n), TTL: time.Minute, NowMS: time.Now().UnixMilli()})
					if err != nil {
						t.Fatalf("Acquire: %v", err)
					}
					return l
				}
				for i := range tt.held {
					if l := grant(i); l.WorkerID != int64(i) || l.NoHistory {
						t.Fatalf("grant %d on a new table = worker %d, NoHistory %v; want worker %d, false", i, l.WorkerID, l.NoHistory, i)
					}
				}
				db.Exec(t, tt.stmts...)
				if tt.advance {
					adv := st.(interface {
						AdvanceLeases(context.Context, int64, bool, func(string, int64, int64, int64)) error
					})
					if err := adv.AdvanceLeases(t.Context(), time.Now().UnixMilli(), false, func(string, int64, int64, int64) {}); err != nil {
						t.Fatalf("AdvanceLeases: %v", err)
					}
				}
				for i, want := range tt.want {
					if l := grant(100 + i); l.NoHistory != want {
						t.Errorf("grant %d after: worker %d, NoHistory %v, want %v", i, l.WorkerID, l.NoHistory, want)
					}
				}
			})
		}
	}
}
