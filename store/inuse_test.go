package store_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// TestSQLiteHolder: a file is held while a SQLite handle has it open (in
// WAL mode, idle or not), and free once every handle closed. The handle
// here is this process's, which only Linux reports (see SQLiteHolder); the
// root's migrate tests hold the file from an idalloc process of its own.
func TestSQLiteHolder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SQLiteHolder sees this process's own locks on Linux only")
	}
	cases := []struct {
		name     string
		keepOpen bool
		want     bool
	}{
		{"open handle", true, true},
		{"closed", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "idalloc.db")
			st, err := store.OpenSQLite(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			if !c.keepOpen {
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}
			held, pid, err := store.SQLiteHolder(path)
			if c.keepOpen {
				// After the check: it dropped the handle's locks (fcntl's rule).
				_ = st.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			wantPID := 0
			if c.want {
				wantPID = os.Getpid()
			}
			if held != c.want || pid != wantPID {
				t.Errorf("SQLiteHolder: got held %v by %d, want %v by %d", held, pid, c.want, wantPID)
			}
		})
	}
	if _, _, err := store.SQLiteHolder(filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("SQLiteHolder of a missing file: got no error")
	}
}

// TestLiveLeases: a read-only source lists the leases not expired by the
// database's clock, with cluster, worker ID and holder; a released one is
// not live.
func TestLiveLeases(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			db := d.NewDB(t)
			st := db.Open(t)
			l, err := st.Acquire(ctx, workerlease.AcquireRequest{Cluster: "eu", MaxWorkerID: 3, Token: strings.Repeat("L", 22),
				Holder: "host-a:42", TTL: time.Minute, NowMS: time.Now().UnixMilli()})
			if err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				name   string
				before func() error
				want   int
			}{
				{"held", func() error { return nil }, 1},
				{"released", func() error { return st.Release(ctx, l.Cluster, l.WorkerID, l.Token, 0) }, 0},
			}
			for _, c := range cases {
				if err := c.before(); err != nil {
					t.Fatal(err)
				}
				ro := db.OpenReadOnly(t)
				live, err := ro.LiveLeases(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(live) != c.want {
					t.Fatalf("%s: got %d live leases (%+v), want %d", c.name, len(live), live, c.want)
				}
				if c.want == 1 {
					got := live[0]
					if got.Cluster != "eu" || got.WorkerID != l.WorkerID || got.Holder != "host-a:42" ||
						got.Expires().Before(time.Now().Add(30*time.Second)) {
						t.Errorf("%s: got %+v expiring %v, want cluster eu, worker %d, holder host-a:42, about a minute from now",
							c.name, got, got.Expires(), l.WorkerID)
					}
				}
			}
		})
	}
}
