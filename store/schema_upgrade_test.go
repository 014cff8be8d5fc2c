package store_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// in2040 is past the last instant a TIMESTAMP column can hold,
// 2038-01-19 03:14:07 UTC.
var in2040 = time.Date(2040, 6, 1, 0, 0, 0, 0, time.UTC)

// TestStoreWorksWithTheClockIn2040 runs every write that records the
// database's time (fetch, give-back, create, lease grant, renew, release,
// history carry) with that clock reading 2040, through store.FixClock: a
// database's own clock cannot be set past 2038 for a test (MariaDB before
// 11.5 caps SET timestamp there), so the store's NOW(3) is replaced by the
// DATETIME value it would return then.
func TestStoreWorksWithTheClockIn2040(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := t.Context()
			st := d.Open(t)
			store.FixClock(st, in2040)

			if err := st.CreateTag(ctx, segment.Tag{AppTag: "orders", Step: 10}); err != nil {
				t.Fatalf("CreateTag: %v", err)
			}
			if f, err := st.Fetch(ctx, "orders", segment.MaxUsableID, 0); err != nil || f.MaxID != 10 {
				t.Fatalf("Fetch = %+v, %v; want max_id 10", f, err)
			}
			if ok, err := st.GiveBack(ctx, "orders", 10, 5); err != nil || !ok {
				t.Fatalf("GiveBack = %v, %v; want true", ok, err)
			}
			tags, err := st.Tags(ctx)
			if err != nil {
				t.Fatalf("Tags: %v", err)
			}
			for _, tg := range tags {
				if tg.AppTag == "orders" && (!tg.UpdateTime.Equal(in2040) || tg.MaxID != 5) {
					t.Errorf("Tags: orders got update_time %v, max_id %d; want %v, 5", tg.UpdateTime, tg.MaxID, in2040)
				}
			}

			req := workerlease.AcquireRequest{Cluster: "c", MaxWorkerID: 3, Token: "token-a", TTL: 30 * time.Second, NowMS: in2040.UnixMilli()}
			l, err := st.Acquire(ctx, req)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if want := in2040.Add(30 * time.Second); !l.ExpiresAt.Equal(want) {
				t.Errorf("Acquire: expires_at got %v, want %v", l.ExpiresAt, want)
			}
			r, err := st.Renew(ctx, "c", l.WorkerID, l.Token, time.Minute, in2040.UnixMilli())
			if err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if want := in2040.Add(time.Minute); !r.ExpiresAt.Equal(want) {
				t.Errorf("Renew: expires_at got %v, want %v", r.ExpiresAt, want)
			}
			if err := st.Release(ctx, "c", l.WorkerID, l.Token, in2040.UnixMilli()); err != nil {
				t.Fatalf("Release: %v", err)
			}
			req.Token = "token-b"
			if next, err := st.Acquire(ctx, req); err != nil || next.WorkerID != l.WorkerID {
				t.Fatalf("Acquire after release = worker %d, %v; want worker %d", next.WorkerID, err, l.WorkerID)
			}
			lt := store.LeaseTimestamp{Cluster: "c", WorkerID: 7, LastTimestampMS: in2040.UnixMilli()}
			if err := st.(interface {
				RaiseLeaseTimestamp(context.Context, store.LeaseTimestamp) error
			}).RaiseLeaseTimestamp(ctx, lt); err != nil {
				t.Fatalf("RaiseLeaseTimestamp: %v", err)
			}
		})
	}
}

// oldSchema is idalloc's schema before DATETIME, with expires_at made
// TIMESTAMP too, as a hand-made table could have it.
var oldSchema = []string{
	`CREATE TABLE segments (
	  app_tag     VARCHAR(64)  NOT NULL,
	  max_id      BIGINT       NOT NULL DEFAULT 0,
	  step        BIGINT       NOT NULL,
	  description VARCHAR(256) NOT NULL DEFAULT '',
	  update_time TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	  PRIMARY KEY (app_tag)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
	`CREATE TABLE worker_leases (
	  cluster           VARCHAR(64)  NOT NULL,
	  worker_id         BIGINT       NOT NULL,
	  token             VARCHAR(32)  NOT NULL DEFAULT '',
	  holder            VARCHAR(255) NOT NULL DEFAULT '',
	  expires_at        TIMESTAMP(3) NOT NULL,
	  last_timestamp_ms BIGINT       NOT NULL DEFAULT 0,
	  PRIMARY KEY (cluster, worker_id)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
	// Written in a session 8 hours east of UTC: the instant is
	// 2030-01-01 00:00:00.123 UTC.
	`INSERT INTO segments (app_tag, max_id, step, update_time) VALUES ('orders', 70, 10, '2030-01-01 08:00:00.123')`,
	`INSERT INTO worker_leases (cluster, worker_id, expires_at, last_timestamp_ms) VALUES ('c', 0, '2030-01-01 08:00:00', 5)`,
}

// wantAlters are the statements that convert oldSchema.
var wantAlters = []string{
	"ALTER TABLE `segments` MODIFY `update_time` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)",
	"ALTER TABLE `worker_leases` MODIFY `expires_at` DATETIME(3) NOT NULL",
}

var written = time.Date(2030, 1, 1, 0, 0, 0, 123e6, time.UTC)

// mysqlExec runs stmts on dsn in one session whose time_zone is zone.
func mysqlExec(t *testing.T, dsn, zone string, stmts ...string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"time_zone": "'" + zone + "'"}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// checkConverted fails t unless st reads the row oldSchema wrote with its
// instant intact.
func checkConverted(t *testing.T, st *store.MySQL) {
	t.Helper()
	tags, err := st.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	for _, tg := range tags {
		if tg.AppTag == "orders" {
			if !tg.UpdateTime.Equal(written) || tg.MaxID != 70 {
				t.Errorf("orders got max_id %d, update_time %v; want 70, %v", tg.MaxID, tg.UpdateTime, written)
			}
			return
		}
	}
	t.Errorf("Tags = %+v, want orders among them", tags)
}

func TestMySQLTimestampColumnsAreNamedAtStart(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	mysqlExec(t, dsn, "+08:00", oldSchema...)
	_, err := store.OpenMySQL(t.Context(), dsn, store.MySQLOptions{})
	if !errors.Is(err, store.ErrOutdatedSchema) {
		t.Fatalf("OpenMySQL on TIMESTAMP columns: error = %v, want %v", err, store.ErrOutdatedSchema)
	}
	msg := err.Error()
	for _, stmt := range wantAlters {
		if !strings.Contains(msg, stmt) {
			t.Errorf("OpenMySQL error %q does not name %q", msg, stmt)
		}
	}
	// What the message says to run, pasted into a session of another
	// time_zone, fixes it.
	_, paste, ok := strings.Cut(msg, "or run: ")
	if !ok {
		t.Fatalf("OpenMySQL error %q names no statement to run", msg)
	}
	var stmts []string
	for s := range strings.SplitSeq(paste, ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	mysqlExec(t, dsn, "+08:00", stmts...)
	st, err := store.OpenMySQL(t.Context(), dsn, store.MySQLOptions{})
	if err != nil {
		t.Fatalf("OpenMySQL after the ALTER TABLE: %v", err)
	}
	defer st.Close()
	checkConverted(t, st)
}

func TestMySQLInitSchemaTurnsTimestampIntoDatetime(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	mysqlExec(t, dsn, "+08:00", oldSchema...)
	// The DSN's own time_zone is overridden, or the conversion would read
	// the instants 8 hours off.
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"time_zone": "'+08:00'"}
	var reports []string
	st, err := store.OpenMySQL(t.Context(), cfg.FormatDSN(), store.MySQLOptions{InitSchema: true,
		Report: func(change string) { reports = append(reports, change) }})
	if err != nil {
		t.Fatalf("OpenMySQL with InitSchema: %v", err)
	}
	defer st.Close()
	checkConverted(t, st)
	if i := slices.IndexFunc(reports, func(r string) bool {
		return strings.HasPrefix(r, "converted TIMESTAMP columns ") && strings.HasSuffix(r, " to DATETIME(3)")
	}); i < 0 {
		t.Errorf("InitSchema reported %q, want the TIMESTAMP columns it converted", reports)
	}
	// Now a plain start is accepted, and a 2040 clock works.
	again, err := store.OpenMySQL(t.Context(), dsn, store.MySQLOptions{})
	if err != nil {
		t.Fatalf("OpenMySQL after InitSchema: %v", err)
	}
	defer again.Close()
	store.FixClock(again, in2040)
	if _, err := again.Fetch(t.Context(), "orders", segment.MaxUsableID, 0); err != nil {
		t.Fatalf("Fetch with the clock in 2040: %v", err)
	}
	// InitSchema created what was missing around the converted tables.
	if err := again.CheckLayout(t.Context(), "c", 0, 10); err != nil {
		t.Fatalf("CheckLayout: %v", err)
	}
}
