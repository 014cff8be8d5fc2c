package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// TestCreationOverlapped: grant G1 finds worker 0 with no row and no mark,
// and stalls before its insert. Meanwhile another grant (X) takes the ID
// and its row is deleted while X may still issue under it, or every row is
// deleted. G1's insert must then fail, or not count as new.
func TestCreationOverlapped(t *testing.T) {
	tests := []struct {
		name     string
		between  func(t *testing.T, st *SQLite)
		lostRace bool // G1's insert loses, and it looks again
		history  bool // G1's grant has history
	}{
		{"nothing in between", func(*testing.T, *SQLite) {}, false, true},
		{"another grant's row made and deleted", func(t *testing.T, st *SQLite) {
			x, err := st.Acquire(t.Context(), overlapRequest("token-x"))
			if err != nil || x.WorkerID != 0 || x.NoHistory {
				t.Fatalf("X's grant = %+v, %v; want worker 0 with history", x, err)
			}
			exec(t, st, "DELETE FROM worker_leases WHERE cluster = 'c'")
		}, true, false},
		{"every row deleted", func(t *testing.T, st *SQLite) { exec(t, st, "DELETE FROM worker_leases") }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "idalloc.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			genesis, marked, err := st.readMark(t.Context(), st.x, "c", 0)
			if err != nil || !genesis || marked {
				t.Fatalf("readMark = %v, %v, %v; want the genesis row and no mark", genesis, marked, err)
			}
			tt.between(t, st)
			g1, err := st.insertNew(t.Context(), st.x, overlapRequest("token-g1"), 0, true)
			if tt.lostRace {
				if !errors.Is(err, errLostRace) {
					t.Fatalf("G1's insert after X's = %+v, %v; want a lost race", g1, err)
				}
				if g1, err = st.Acquire(t.Context(), overlapRequest("token-g1")); err != nil {
					t.Fatalf("G1's grant, looking again: %v", err)
				}
			}
			if err != nil || g1.WorkerID != 0 || g1.NoHistory == tt.history {
				t.Errorf("G1's grant = worker %d, NoHistory %v, %v; want worker 0, NoHistory %v", g1.WorkerID, g1.NoHistory, err, !tt.history)
			}
		})
	}
}

func overlapRequest(token string) workerlease.AcquireRequest {
	return workerlease.AcquireRequest{Cluster: "c", MaxWorkerID: 0, Token: token, TTL: time.Minute, NowMS: time.Now().UnixMilli()}
}

func exec(t *testing.T, st *SQLite, stmt string) {
	t.Helper()
	if _, err := st.x.ExecContext(t.Context(), stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
