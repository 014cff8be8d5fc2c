package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/idalloc/idalloc/workerlease"
	"github.com/jmoiron/sqlx"
)

// Column widths of worker_leases in schema.sql. SQLite would store longer
// values, so both drivers refuse (or, for the free-text holder, cut) alike.
const (
	maxCluster = 64
	maxToken   = 32
	maxHolder  = 255
)

// errLostRace: another acquirer wrote the worker ID between our look and our
// write; Acquire looks again.
var errLostRace = errors.New("lost the race for the worker ID")

// leaseRow is one worker_leases row as read back.
type leaseRow struct {
	Token           string `db:"token"`
	Holder          string `db:"holder"`
	ExpiresAt       dbTime `db:"expires_at"`
	LastTimestampMS int64  `db:"last_timestamp_ms"`
}

func (r leaseRow) lease(cluster string, workerID int64) workerlease.Lease {
	return workerlease.Lease{
		Cluster:         cluster,
		WorkerID:        workerID,
		Token:           r.Token,
		Holder:          r.Holder,
		ExpiresAt:       r.ExpiresAt.Time,
		LastTimestampMS: r.LastTimestampMS,
	}
}

// Acquire grants the preferred free worker ID of req.Cluster: among IDs that
// are free (never leased, released, or expired by the database's clock) and
// whose last_timestamp_ms is at most req.NowMS, the lowest; failing that,
// the lowest free one. Two concurrent callers never get the same ID: the
// grant is a compare-and-set on a row that is still free, or an insert of a
// row that is still absent; a caller that loses looks again.
// Errors: workerlease.ErrNoWorkerID, workerlease.ErrInvalidToken,
// workerlease.ErrInvalidWorkerID (negative MaxWorkerID).
func (d *db) Acquire(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
	err := checkLeaseArgs(req.Cluster, req.Token, req.TTL)
	if err == nil && req.MaxWorkerID < 0 {
		err = workerlease.ErrInvalidWorkerID
	}
	for err == nil {
		var l workerlease.Lease
		if d.dialect.oneWriter {
			err = d.inTx(ctx, func(tx *sqlx.Tx) (err error) {
				l, err = d.tryAcquire(ctx, tx, req)
				return err
			})
		} else {
			l, err = d.tryAcquire(ctx, d.x, req)
		}
		if err == nil {
			return l, nil
		}
		if errors.Is(err, errLostRace) {
			// Another caller's grant: this ends once the cluster is full,
			// or when ctx does.
			err = nil
		}
	}
	return workerlease.Lease{}, fmt.Errorf("acquire worker ID in cluster %q: %w", req.Cluster, err)
}

// tryAcquire looks for the preferred ID and claims it; errLostRace when
// another caller claimed it in between.
func (d *db) tryAcquire(ctx context.Context, e sqlx.ExtContext, req workerlease.AcquireRequest) (workerlease.Lease, error) {
	var free struct {
		WorkerID        int64 `db:"worker_id"`
		LastTimestampMS int64 `db:"last_timestamp_ms"`
	}
	err := sqlx.GetContext(ctx, e, &free, d.q(`SELECT worker_id, last_timestamp_ms FROM worker_leases
		WHERE cluster = ? AND worker_id BETWEEN 0 AND ? AND (token = '' OR expires_at <= {now})
		ORDER BY CASE WHEN last_timestamp_ms <= ? THEN 0 ELSE 1 END, worker_id LIMIT 1`),
		req.Cluster, req.MaxWorkerID, req.NowMS)
	haveFree := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return workerlease.Lease{}, err
	}
	// The lowest ID with no row yet; it may lie above MaxWorkerID.
	var unused int64
	err = sqlx.GetContext(ctx, e, &unused, `SELECT CASE
		WHEN NOT EXISTS (SELECT 1 FROM worker_leases WHERE cluster = ? AND worker_id = 0) THEN 0
		ELSE (SELECT MIN(a.worker_id) + 1 FROM worker_leases a
			WHERE a.cluster = ? AND a.worker_id >= 0 AND NOT EXISTS (
				SELECT 1 FROM worker_leases b WHERE b.cluster = a.cluster AND b.worker_id = a.worker_id + 1))
		END`, req.Cluster, req.Cluster)
	if err != nil {
		return workerlease.Lease{}, err
	}

	holder := cut(req.Holder, maxHolder)
	ttl := req.TTL.Milliseconds()
	// A never-leased ID counts as last_timestamp_ms 0, at or below NowMS.
	switch {
	case haveFree && (free.LastTimestampMS <= req.NowMS && free.WorkerID < unused || unused > req.MaxWorkerID):
		return d.claim(ctx, e, req.Cluster, free.WorkerID, req.Token, d.q(`UPDATE worker_leases
			SET token = ?, holder = ?, expires_at = {now+ms}
			WHERE cluster = ? AND worker_id = ? AND (token = '' OR expires_at <= {now})`),
			req.Token, holder, ttl, req.Cluster, free.WorkerID)
	case unused <= req.MaxWorkerID:
		return d.claim(ctx, e, req.Cluster, unused, req.Token, d.q(`INSERT INTO worker_leases
			(cluster, worker_id, token, holder, expires_at, last_timestamp_ms)
			VALUES (?, ?, ?, ?, {now+ms}, 0)`),
			req.Cluster, unused, req.Token, holder, ttl)
	default:
		return workerlease.Lease{}, workerlease.ErrNoWorkerID
	}
}

// claim runs one granting statement, then reads the lease back by its
// token: the row can change meanwhile only if the new lease already expired
// and was taken over, and then nothing was won. errLostRace when the
// statement matched nothing, hit a row another caller just wrote, or the
// lease is gone.
func (d *db) claim(ctx context.Context, e sqlx.ExtContext, cluster string, workerID int64, token, stmt string, args ...any) (workerlease.Lease, error) {
	if _, ok := e.(*sqlx.DB); ok {
		// Statement and read-back in one short transaction: the read-back
		// then comes from the primary that took the write, even behind a
		// read/write-splitting proxy, and last_timestamp_ms, the new
		// holder's floor, cannot come from a lagging replica.
		var l workerlease.Lease
		err := d.inTx(ctx, func(tx *sqlx.Tx) (err error) {
			l, err = d.claim(ctx, tx, cluster, workerID, token, stmt, args...)
			return err
		})
		return l, err
	}
	ok, err := execOne(ctx, e, stmt, args...)
	switch {
	case d.dialect.isLostRace(err), err == nil && !ok:
		return workerlease.Lease{}, errLostRace
	case err != nil:
		return workerlease.Lease{}, err
	}
	var row leaseRow
	found, err := readLease(ctx, e, &row, cluster, workerID)
	switch {
	case err != nil:
		return workerlease.Lease{}, err
	case !found || row.Token != token:
		return workerlease.Lease{}, errLostRace
	}
	return row.lease(cluster, workerID), nil
}

// Renew extends the lease to the database's now + ttl and raises
// last_timestamp_ms to lastTimestampMS if that is larger, by compare-and-set
// on a token whose lease has not expired. Errors: workerlease.ErrNotAssigned,
// workerlease.ErrTokenMismatch, workerlease.ErrLeaseExpired,
// workerlease.ErrInvalidToken.
func (d *db) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (workerlease.Lease, error) {
	var row leaseRow
	var refused error
	err := checkLeaseArgs(cluster, token, ttl)
	if err == nil {
		err = d.inTx(ctx, func(tx *sqlx.Tx) error {
			ok, err := execOne(ctx, tx, d.q(`UPDATE worker_leases
				SET expires_at = {now+ms}, last_timestamp_ms = {greatest}(last_timestamp_ms, ?)
				WHERE cluster = ? AND worker_id = ? AND token = ? AND expires_at > {now}`),
				ttl.Milliseconds(), lastTimestampMS, cluster, workerID, token)
			if err != nil {
				return err
			}
			found, err := readLease(ctx, tx, &row, cluster, workerID)
			if err != nil || ok {
				return err
			}
			refused = conflict(found, row.Token, token)
			return d.keepHistory(ctx, tx, refused, cluster, workerID, token, lastTimestampMS)
		})
	}
	if err == nil {
		err = refused
	}
	if err != nil {
		return workerlease.Lease{}, fmt.Errorf("renew worker ID %d in cluster %q: %w", workerID, cluster, err)
	}
	return row.lease(cluster, workerID), nil
}

// Release frees the worker ID by compare-and-set on a token whose lease has
// not expired, raising last_timestamp_ms as Renew does, so the next holder
// starts after it. Errors as Renew.
func (d *db) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	err := checkLeaseArgs(cluster, token, time.Millisecond)
	if err == nil {
		err = d.release(ctx, cluster, workerID, token, lastTimestampMS)
	}
	if err != nil {
		return fmt.Errorf("release worker ID %d in cluster %q: %w", workerID, cluster, err)
	}
	return nil
}

func (d *db) release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	ok, err := execOne(ctx, d.x, d.q(`UPDATE worker_leases
		SET token = '', expires_at = {now}, last_timestamp_ms = {greatest}(last_timestamp_ms, ?)
		WHERE cluster = ? AND worker_id = ? AND token = ? AND expires_at > {now}`),
		lastTimestampMS, cluster, workerID, token)
	if err != nil || ok {
		return err
	}
	var row leaseRow
	found, err := readLease(ctx, d.x, &row, cluster, workerID)
	if err != nil {
		return err
	}
	refused := conflict(found, row.Token, token)
	if err := d.keepHistory(ctx, d.x, refused, cluster, workerID, token, lastTimestampMS); err != nil {
		return err
	}
	return refused
}

// keepHistory still records lastTimestampMS when a renew or release is
// refused because the token's own lease expired and no one took it over: the
// holder may have issued IDs up to it, and the next holder must start after
// them. It only ever raises the value, and only while the token is the row's.
func (d *db) keepHistory(ctx context.Context, e sqlx.ExecerContext, refused error, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	if !errors.Is(refused, workerlease.ErrLeaseExpired) {
		return nil
	}
	_, err := e.ExecContext(ctx, d.q(`UPDATE worker_leases SET last_timestamp_ms = {greatest}(last_timestamp_ms, ?)
		WHERE cluster = ? AND worker_id = ? AND token = ?`), lastTimestampMS, cluster, workerID, token)
	return err
}

// readLease reads one row, reporting whether it exists.
func readLease(ctx context.Context, q sqlx.QueryerContext, row *leaseRow, cluster string, workerID int64) (bool, error) {
	err := sqlx.GetContext(ctx, q, row, `SELECT token, holder, expires_at, last_timestamp_ms
		FROM worker_leases WHERE cluster = ? AND worker_id = ?`, cluster, workerID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// conflict says why a compare-and-set on token matched no row, from the row
// as it is now.
func conflict(found bool, rowToken, token string) error {
	switch {
	case !found || rowToken == "":
		return workerlease.ErrNotAssigned
	case rowToken != token:
		return workerlease.ErrTokenMismatch
	default:
		return workerlease.ErrLeaseExpired
	}
}

// checkLeaseArgs refuses the empty token, which marks a released row and so
// would match one, and values that one driver would store and the other reject.
func checkLeaseArgs(cluster, token string, ttl time.Duration) error {
	switch {
	case token == "" || utf8.RuneCountInString(token) > maxToken:
		return workerlease.ErrInvalidToken
	case utf8.RuneCountInString(cluster) > maxCluster:
		return fmt.Errorf("cluster name longer than %d characters", maxCluster)
	case ttl < time.Millisecond:
		return fmt.Errorf("lease TTL %v is below the store's 1ms resolution", ttl)
	}
	return nil
}

// cut shortens s to at most n characters.
func cut(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
