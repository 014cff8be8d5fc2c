package storetest

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

func timeCases() []testCase {
	return []testCase{
		{"time/update_time and expires_at hold a time after 2038", testTimesAfter2038},
	}
}

// after2038 is past the last instant a TIMESTAMP column can hold
// (2038-01-19 03:14:07 UTC), with milliseconds to show they are kept.
var after2038 = time.Date(2040, 6, 1, 12, 34, 56, 789e6, time.UTC)

// testTimesAfter2038 writes a 2040 time into each time column by a plain
// statement, as the store's own writes will once the database's clock reads
// 2040 (MySQL refuses it in a TIMESTAMP column: error 1292 in strict mode),
// and reads it back through the store.
func testTimesAfter2038(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 10})
	db.exec(t, `UPDATE segments SET update_time = ? WHERE app_tag = 'orders'`, db.timeValue(t, after2038))
	tags, err := st.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	for _, tg := range tags {
		if tg.AppTag == "orders" && !tg.UpdateTime.Equal(after2038) {
			t.Errorf("Tags: orders' update_time = %v, want %v", tg.UpdateTime, after2038)
		}
	}
	mustFetch(t, st, "orders", 0) // and the row is still usable

	l := mustAcquire(t, st, acquireRequest("token-a", 0))
	db.exec(t, `UPDATE worker_leases SET expires_at = ? WHERE cluster = ? AND worker_id = ?`,
		db.timeValue(t, after2038), cluster, l.WorkerID)
	// Held until 2040 by the database's clock: nobody else gets the ID,
	// its holder still renews and releases it.
	if _, err := st.Acquire(t.Context(), acquireRequest("token-b", 0)); !errors.Is(err, workerlease.ErrNoWorkerID) {
		t.Errorf("Acquire of a lease held until 2040: error = %v, want %v", err, workerlease.ErrNoWorkerID)
	}
	r := mustRenew(t, st, l, 0)
	if !r.ExpiresAt.Before(after2038) {
		t.Errorf("Renew: expires_at = %v, want now + TTL", r.ExpiresAt)
	}
	if err := st.Release(t.Context(), cluster, l.WorkerID, l.Token, 0); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// timeValue is tm as the driver's time columns hold it: SQLite's are Unix
// milliseconds, MySQL's DATETIME(3) in UTC, PostgreSQL's an instant
// (TIMESTAMPTZ).
func (db DB) timeValue(tb testing.TB, tm time.Time) any {
	if db.driver(tb).millis {
		return tm.UnixMilli()
	}
	return tm.UTC()
}

// exec runs one statement on db outside the store, on a connection of its
// own: for a MySQL database one whose session time_zone is UTC, as the
// store's are.
func (db DB) exec(t *testing.T, stmt string, args ...any) {
	t.Helper()
	d := db.driver(t)
	dsn, stmt := d.utcConn(t, db.DSN, stmt)
	raw, err := sql.Open(d.sqlName, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", db.Driver, err)
	}
	defer raw.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := raw.ExecContext(ctx, stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// cluster is the lease cluster of the time cases.
const cluster = "c1"

func acquireRequest(token string, maxWorkerID int64) workerlease.AcquireRequest {
	return workerlease.AcquireRequest{
		Cluster: cluster, MaxWorkerID: maxWorkerID, Token: token, Holder: "storetest",
		TTL: time.Minute, NowMS: time.Now().UnixMilli(),
	}
}

func mustAcquire(t *testing.T, st store.Store, req workerlease.AcquireRequest) workerlease.Lease {
	t.Helper()
	l, err := st.Acquire(t.Context(), req)
	if err != nil {
		t.Fatalf("Acquire(token %q): %v", req.Token, err)
	}
	return l
}

func mustRenew(t *testing.T, st store.Store, l workerlease.Lease, lastTimestampMS int64) workerlease.Lease {
	t.Helper()
	r, err := st.Renew(t.Context(), l.Cluster, l.WorkerID, l.Token, time.Minute, lastTimestampMS)
	if err != nil {
		t.Fatalf("Renew(worker %d, token %q): %v", l.WorkerID, l.Token, err)
	}
	return r
}
