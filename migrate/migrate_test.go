package migrate

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

func TestMigrateCarriesLeaseTimestamps(t *testing.T) {
	for _, target := range storetest.Drivers() {
		t.Run(target.Name, func(t *testing.T) {
			ctx := context.Background()
			from := storetest.SQLite().Open(t)
			l, err := from.Acquire(ctx, workerlease.AcquireRequest{Cluster: "c", MaxWorkerID: 3, Token: strings.Repeat("A", 22), TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			const reserved = int64(4_000_000_000_000)
			if _, err := from.Renew(ctx, "c", l.WorkerID, l.Token, time.Minute, reserved); err != nil {
				t.Fatal(err)
			}
			const epoch = int64(1_767_225_600_000)
			if err := from.CheckLayout(ctx, "c", epoch, 10); err != nil {
				t.Fatal(err)
			}
			to := target.Open(t)
			for i := 0; i < 2; i++ { // twice: idempotent
				if err := migrateLeases(ctx, from.(historySource), to.(historyTarget), func(string) {}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := to.Acquire(ctx, workerlease.AcquireRequest{Cluster: "c", MaxWorkerID: 0, Token: strings.Repeat("B", 22), TTL: time.Minute, NowMS: reserved + 1})
			if err != nil {
				t.Fatal(err)
			}
			if got.WorkerID != l.WorkerID || got.LastTimestampMS != reserved {
				t.Fatalf("target lease got worker %d last_timestamp_ms %d, want worker %d and %d", got.WorkerID, got.LastTimestampMS, l.WorkerID, reserved)
			}
			// The cluster's layout came along: another one is refused there.
			if err := to.CheckLayout(ctx, "c", epoch, 8); !errors.Is(err, snowflake.ErrLayoutMismatch) {
				t.Fatalf("target CheckLayout with other worker bits = %v, want ErrLayoutMismatch", err)
			}
		})
	}
}

// leafTable is the DDL in the README of Meituan-Dianping/Leaf.
const leafTable = `CREATE TABLE leaf_alloc (
  biz_tag     varchar(128) NOT NULL DEFAULT '',
  max_id      bigint(20)   NOT NULL DEFAULT '1',
  step        int(11)      NOT NULL,
  description varchar(256) DEFAULT NULL,
  update_time timestamp    NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// mysqlDB opens dsn outside any store, closed at t's cleanup.
func mysqlDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A Leaf deployment moves to idalloc: every tag idalloc can take continues
// above every ID Leaf issued (Leaf hands out IDs below max_id); the others
// are listed with the reason and the command fails; Leaf's table is only
// read.
func TestMigrateFromLeaf(t *testing.T) {
	leafDSN := storetest.MySQLDSN(t)
	leaf := mysqlDB(t, leafDSN)
	tooLong := strings.Repeat("a", 65)
	for _, stmt := range []string{leafTable, `INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES
		('order', 5001, 1000, 'orders'), ('user.profile', 1, 10, NULL),
		('订单', 3000, 100, 'zh'), ('has space', 10, 10, ''), ('` + tooLong + `', 1, 1, ''), ('zero_step', 100, 0, '')`} {
		if _, err := leaf.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	wantRefused := map[string]string{
		`"订单"`:              "name has a character outside [A-Za-z0-9_.:-]",
		`"has space"`:       "name has a character outside [A-Za-z0-9_.:-]",
		`"` + tooLong + `"`: "name longer than idalloc's 64 characters (65 bytes)",
		`"zero_step"`:       "step 0 is below 1",
	}
	for _, target := range storetest.Drivers() {
		t.Run(target.Name, func(t *testing.T) {
			ctx := t.Context()
			toDB := target.NewDB(t)
			cmd := []string{"-from-driver", "leaf", "-from-dsn", leafDSN, "-to-driver", toDB.Driver, "-to-dsn", toDB.DSN}
			for run := 1; run <= 2; run++ { // the second run is harmless too
				var out strings.Builder
				err := runMigrate(cmd, &out, io.Discard)
				var refused refusedTagsError
				if !errors.As(err, &refused) || refused.refused != 4 || refused.total != 6 {
					t.Fatalf("run %d: migrate error = %v, want 4 of 6 tags refused", run, err)
				}
				for name, why := range wantRefused {
					if line := name + ": NOT MIGRATED: " + why; !strings.Contains(out.String(), line) {
						t.Errorf("run %d: output lacks %q:\n%s", run, line, out.String())
					}
				}
			}

			to := toDB.Open(t)
			tags, err := to.Tags(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tg := range tags {
				names = append(names, tg.AppTag)
			}
			if got, want := strings.Join(names, " "), "order test_business user.profile"; got != want {
				t.Errorf("target tags got %s, want %s", got, want)
			}
			a, err := segment.New(ctx, to, segment.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(ctx)
			for tag, want := range map[string]int64{"order": 5002, "user.profile": 2} {
				if id, err := a.Next(ctx, tag); err != nil || id != want {
					t.Errorf("%s: first ID after the move got %d, %v; want %d", tag, id, err, want)
				}
			}
		})
	}
	var maxID int64
	if err := leaf.QueryRowContext(t.Context(), `SELECT max_id FROM leaf_alloc WHERE biz_tag = 'order'`).Scan(&maxID); err != nil || maxID != 5001 {
		t.Errorf("Leaf's max_id of order got %d, %v; want 5001 as before", maxID, err)
	}
}

// The Docker recipe: a SQLite file this user may only read (mode 0444, in a
// read-only directory) migrates, and stays byte for byte as it was.
func TestMigrateFromReadOnlySQLiteFile(t *testing.T) {
	for _, target := range storetest.Drivers() {
		t.Run(target.Name, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			path := filepath.Join(dir, "idalloc.db")
			from, err := store.OpenSQLite(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if err := from.CreateTag(ctx, segment.Tag{AppTag: "order", Step: 10, Start: 101}); err != nil {
				t.Fatal(err)
			}
			if err := from.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o444); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}

			toDB := target.NewDB(t)
			err = runMigrate([]string{"-from-driver", "sqlite", "-from-dsn", path, "-to-driver", toDB.Driver, "-to-dsn", toDB.DSN},
				io.Discard, io.Discard)
			if err != nil {
				t.Fatalf("migrate: %v", err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("the source file changed")
			}
			a, err := segment.New(ctx, toDB.Open(t), segment.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(ctx)
			if id, err := a.Next(ctx, "order"); err != nil || id != 101 {
				t.Errorf("first ID after the move got %d, %v; want 101", id, err)
			}
		})
	}
}

// -init-schema prepares an empty MySQL or PostgreSQL target; without it
// the move fails before writing anything.
func TestMigrateInitSchemaPreparesTheTarget(t *testing.T) {
	for _, tc := range []struct {
		driver string
		empty  func(testing.TB) string // a database (or schema) with no tables
	}{
		{"mysql", storetest.MySQLDSN},
		{"postgres", storetest.PostgresDSN},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			fromDB := storetest.SQLite().NewDB(t)
			toDSN := tc.empty(t)
			cmd := []string{"-from-driver", "sqlite", "-from-dsn", fromDB.DSN, "-to-driver", tc.driver, "-to-dsn", toDSN}
			if err := runMigrate(cmd, io.Discard, io.Discard); !errors.Is(err, store.ErrMissingTables) {
				t.Fatalf("migrate to a database without tables: got %v, want ErrMissingTables", err)
			}
			var out strings.Builder
			if err := runMigrate(append(cmd, "-init-schema"), &out, io.Discard); err != nil {
				t.Fatalf("migrate -init-schema: %v", err)
			}
			if want := "init-schema: created table segments"; !strings.Contains(out.String(), want) {
				t.Errorf("migrate -init-schema printed %q, want it to say %q", out.String(), want)
			}
		})
	}
}

func TestMigrateUsage(t *testing.T) {
	var usage, stderr strings.Builder
	if err := runMigrate([]string{"-h"}, &usage, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("migrate -h: error = %v, want flag.ErrHelp", err)
	}
	if stderr.Len() > 0 {
		t.Errorf("migrate -h printed %q to stderr, want the usage on stdout only", stderr.String())
	}
	for _, want := range []string{"-init-schema", "DATETIME(3)", "-from-driver", "sqlite|mysql|postgres|leaf|tinyid", "mysql|postgres|sqlite",
		"default_transaction_read_only", "schema_postgres.sql", "leaf_alloc", "tiny_id_info", "-from-engine", "read-only", "-force"} {
		if !strings.Contains(usage.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, usage.String())
		}
	}
	if err := Migrate([]string{"-h"}, io.Discard, io.Discard); err != nil {
		t.Errorf("Migrate -h = %v, want nil (asking for the usage is no failure)", err)
	}
}

func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		tag  segment.Tag
		want string
	}{
		{segment.Tag{AppTag: "order", Step: 1}, ""},
		{segment.Tag{AppTag: "a.b:c-d_E9", Step: 1, MaxID: segment.MaxUsableID - 1}, ""},
		{segment.Tag{AppTag: "", Step: 1}, "empty name"},
		{segment.Tag{AppTag: "a/b", Step: 1}, "name has a character outside [A-Za-z0-9_.:-]"},
		{segment.Tag{AppTag: "ok", Step: -5}, "step -5 is below 1"},
		{segment.Tag{AppTag: "ok", Step: 1, MaxID: -1}, "max_id -1 is negative"},
		{segment.Tag{AppTag: "ok", Step: 1, MaxID: segment.MaxUsableID}, "max_id 9223372032559808511 leaves no ID up to idalloc's highest, 9223372032559808511"},
		{segment.Tag{AppTag: "ok", Step: 1, Description: strings.Repeat("é", 257)}, "description longer than 256 characters"},
		{segment.Tag{AppTag: "ok", Step: 1, Format: "hex"}, "number format: invalid format: must be sequential, fixed_length, scrambled or dated"},
		{segment.Tag{AppTag: "ok", Step: 1, Format: segment.FormatScrambled, Length: 8}, "number format: scrambled tag: key of 0 bytes: scrambled key must be 16, 24 or 32 bytes"},
		{segment.Tag{AppTag: "ok", Step: 1, Format: segment.FormatFixedLength, Length: 4}, ""},
	} {
		if got := refusal(tc.tag); got != tc.want {
			t.Errorf("refusal(%+v) got %q, want %q", tc.tag, got, tc.want)
		}
	}
}

func TestMigrateFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-from-dsn", "x.db"}, "-to-dsn is required"},
		{[]string{"-from-driver", "leaf", "-to-dsn", "t.db", "-to-driver", "sqlite"}, "-from-dsn is required with -from-driver leaf"},
		{[]string{"-from-driver", "mysql", "-to-dsn", "t.db", "-to-driver", "sqlite"}, "-from-dsn is required with -from-driver mysql"},
		{[]string{"-from-driver", "pg", "-from-dsn", "x", "-to-dsn", "t.db", "-to-driver", "sqlite"}, `unknown driver "pg"`},
		{[]string{"-to-dsn", "t.db", "extra"}, `unexpected argument "extra"`},
		{[]string{"-from-driver", "tinyid", "-to-dsn", "t.db", "-to-driver", "sqlite"}, "-from-dsn is required with -from-driver tinyid"},
		{[]string{"-from-driver", "leaf", "-from-engine", "postgres", "-from-dsn", "x", "-to-dsn", "t.db", "-to-driver", "sqlite"},
			"-from-engine is for -from-driver tinyid"},
		{[]string{"-from-driver", "tinyid", "-from-engine", "oracle", "-from-dsn", "x", "-to-dsn", "t.db", "-to-driver", "sqlite"},
			`unknown engine "oracle"`},
		{[]string{"-from-dsn", filepath.Join(t.TempDir(), "missing.db"), "-to-dsn", "t.db", "-to-driver", "sqlite"}, "no such file"},
	} {
		err := runMigrate(tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("migrate %q: error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
