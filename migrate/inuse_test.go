package migrate

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// TestMigrateRefusesALiveLease: a MySQL or PostgreSQL source with a worker
// lease not expired by the database's clock is refused, naming the
// cluster, the worker ID and the holder, unless -force; once released, it
// migrates. (A SQLite source is refused for the file its instance holds
// open: the root's TestMigrateRefusesASQLiteFileInUse.)
func TestMigrateRefusesALiveLease(t *testing.T) {
	for _, d := range storetest.Drivers() {
		if d.Name == "sqlite" {
			continue
		}
		t.Run(d.Name, func(t *testing.T) { testRefusesALiveLease(t, d) })
	}
}

func testRefusesALiveLease(t *testing.T, d storetest.Driver) {
	src := d.NewDB(t)
	st := src.Open(t)
	ctx := context.Background()
	l, err := st.Acquire(ctx, workerlease.AcquireRequest{Cluster: "eu", MaxWorkerID: 7, Token: strings.Repeat("T", 22),
		Holder: "host-a:4242", TTL: time.Minute, NowMS: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	release := func() {
		if err := st.Release(ctx, l.Cluster, l.WorkerID, l.Token, l.LastTimestampMS); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		before func()
		force  bool
		want   string // in the error; "": migrated
	}{
		{"live lease", func() {}, false, fmt.Sprintf(`the %s source is in use: cluster "eu" worker ID %d is leased to "host-a:4242" until `, d.Name, l.WorkerID)},
		{"live lease, -force", func() {}, true, ""},
		{"released", release, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.before()
			args := []string{"-from-driver", src.Driver, "-from-dsn", src.DSN, "-to-driver", "sqlite", "-to-dsn", storetest.SQLite().NewDB(t).DSN}
			if c.force {
				args = append(args, "-force")
			}
			var out bytes.Buffer
			err := runMigrate(args, &out, &bytes.Buffer{})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("migrate: got %v, want the source migrated", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("migrate: got %v, want an error saying %q", err, c.want)
			case c.force && !strings.Contains(out.String(), "source in use, copied anyway (-force): "):
				t.Errorf("migrate -force printed %q, want the live lease named", out.String())
			}
			if err != nil {
				t.Logf("idalloc migrate: %v", err)
			}
		})
	}
}
