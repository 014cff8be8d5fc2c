package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// sqliteSharedFirst and sqliteSharedSize are the bytes of a database file
// that SQLite's unix VFS read-locks for a SHARED lock (its shared range,
// past PENDING_BYTE at 1 GiB). In WAL mode, which idalloc uses, every
// connection holds that lock for as long as it is open, not only while it
// reads: a serving instance holds it from its start to its stop.
const (
	sqliteSharedFirst = 0x40000000 + 2
	sqliteSharedSize  = 510
)

// SQLiteHolder reports whether another connection holds the SQLite file
// at path open in WAL mode (an idalloc instance serving it, or any other
// program reading it), and the process ID of the holder where the system
// tells (0 where not). It only asks about the lock; it takes none.
//
// Call it before this process opens path with SQLite: closing the file
// here drops every POSIX lock the process holds on it (fcntl's rule), so a
// SQLite connection of this process to path would lose its locks. On Linux
// it sees the locks of this process too (open file description locks
// conflict with them); on other Unix systems only another process's; where
// the system has no such locks it reports nothing held. Errors: path
// cannot be opened, or the system refuses the query.
func SQLiteHolder(path string) (held bool, pid int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, 0, fmt.Errorf("check who holds %s: %w", path, err)
	}
	defer f.Close()
	held, pid, err = writeLockedBy(f, sqliteSharedFirst, sqliteSharedSize)
	if err != nil {
		return false, 0, fmt.Errorf("check who holds %s: %w", path, err)
	}
	return held, pid, nil
}

// ErrSQLiteInUse is CheckSQLiteFree's refusal of a SQLite file another
// process holds open.
var ErrSQLiteInUse = errors.New("the sqlite file is in use")

// CheckSQLiteFree refuses the SQLite file at path with ErrSQLiteInUse,
// naming the process, when another process holds it open (SQLiteHolder):
// one file serves one idalloc instance. A file that cannot be asked about
// (missing, unreadable: the open that follows says why) is not refused,
// nor one only this process holds (a test's own handle). The holder's
// locks end with it, however it ends, so a killed instance blocks no
// start after it; where the system has no fcntl locks (Windows), nothing
// is refused. Call it before this process opens path, as SQLiteHolder
// says; two instances starting within the same moment may both pass.
func CheckSQLiteFree(path string) error {
	held, pid, err := SQLiteHolder(path)
	if err != nil || !held || pid == os.Getpid() {
		return nil
	}
	by := "another process"
	if pid > 0 {
		by = fmt.Sprintf("process %d", pid)
	}
	return fmt.Errorf("%w: %s holds %s open (an idalloc instance serving it, or a program reading it); "+
		"one SQLite file serves one instance: stop that one, give this one a file of its own, "+
		"or run several on a MySQL or PostgreSQL database", ErrSQLiteInUse, by, path)
}

// LiveLease is a worker lease that has not expired by the database's
// clock: an instance holds it, and serves snowflake IDs under it.
type LiveLease struct {
	Cluster   string `db:"cluster"`
	WorkerID  int64  `db:"worker_id"`
	Holder    string `db:"holder"`
	ExpiresAt dbTime `db:"expires_at"`
}

// Expires is when the lease ends unless its holder renews it.
func (l LiveLease) Expires() time.Time { return l.ExpiresAt.Time }

// LiveLeases lists the worker leases whose expires_at is after the
// database's now, by cluster and worker ID; none where the database has no
// worker_leases table. A lease released by a graceful stop has expired.
func (r *ReadOnly) LiveLeases(ctx context.Context) ([]LiveLease, error) {
	if !r.tables["worker_leases"] {
		return nil, nil
	}
	var out []LiveLease
	err := r.d.x.SelectContext(ctx, &out, r.d.q(`SELECT cluster, worker_id, holder, expires_at FROM worker_leases
		WHERE cluster <> '' AND expires_at > {now} ORDER BY cluster, worker_id`))
	if err != nil {
		return nil, fmt.Errorf("list live leases: %w", err)
	}
	return out, nil
}
