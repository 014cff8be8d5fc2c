package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/idalloc/idalloc/workerlease"
	"github.com/jmoiron/sqlx"
)

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
// grant is one compare-and-set statement on a row that is still free, or an
// insert of a row that is still absent, each committing on its own; a caller
// that loses looks again at once (a bounded number of times).
// Its input is the Service's, checked there (workerlease.Store). Errors:
// workerlease.ErrNoWorkerID.
func (d *db) Acquire(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
	var l workerlease.Lease
	err := d.retryRaces(ctx, "acquire", func() (err error) {
		if !d.dialect.oneWriter {
			l, err = d.tryAcquire(ctx, d.x, req)
			return err
		}
		return d.inTx(ctx, func(tx *sqlx.Tx) (err error) {
			l, err = d.tryAcquire(ctx, tx, req)
			return err
		})
	})
	if err != nil {
		return workerlease.Lease{}, fmt.Errorf("acquire worker ID in cluster %q: %w", req.Cluster, err)
	}
	return l, nil
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
	err = sqlx.GetContext(ctx, e, &unused, d.q(`SELECT CASE
		WHEN NOT EXISTS (SELECT 1 FROM worker_leases WHERE cluster = ? AND worker_id = 0) THEN 0
		ELSE (SELECT MIN(a.worker_id) + 1 FROM worker_leases a
			WHERE a.cluster = ? AND a.worker_id >= 0 AND NOT EXISTS (
				SELECT 1 FROM worker_leases b WHERE b.cluster = a.cluster AND b.worker_id = a.worker_id + 1))
		END`), req.Cluster, req.Cluster)
	if err != nil {
		return workerlease.Lease{}, err
	}

	// A never-leased ID counts as last_timestamp_ms 0, at or below NowMS.
	switch {
	case haveFree && (free.LastTimestampMS <= req.NowMS && free.WorkerID < unused || unused > req.MaxWorkerID):
		return d.claim(ctx, e, req.Cluster, free.WorkerID, req.Token, 1, d.q(`UPDATE worker_leases
			SET token = ?, holder = ?, expires_at = {now+ms}
			WHERE cluster = ? AND worker_id = ? AND (token = '' OR expires_at <= {now})`),
			req.Token, req.Holder, req.TTL.Milliseconds(), req.Cluster, free.WorkerID)
	case unused <= req.MaxWorkerID:
		return d.create(ctx, e, req, unused)
	default:
		return workerlease.Lease{}, workerlease.ErrNoWorkerID
	}
}

// create grants workerID, which had no row: never leased, or its row was
// lost. Only the genesis row and the ID's mark tell the two apart
// (genesis.go); a grant they do not prove new says so (NoHistory).
func (d *db) create(ctx context.Context, e sqlx.ExtContext, req workerlease.AcquireRequest, workerID int64) (workerlease.Lease, error) {
	genesis, marked, err := d.readMark(ctx, e, req.Cluster, workerID)
	if err != nil {
		return workerlease.Lease{}, err
	}
	return d.insertNew(ctx, e, req, workerID, genesis && !marked)
}

// insertNew inserts workerID's row for create. unmarked says that the
// genesis row was there and the ID had no mark when create looked: the
// insert then brings the mark along, and fails if one was made since.
func (d *db) insertNew(ctx context.Context, e sqlx.ExtContext, req workerlease.AcquireRequest, workerID int64, unmarked bool) (workerlease.Lease, error) {
	stmt, args, rows := d.insertRow(req.Cluster, workerID, unmarked, `?, ?, {now+ms}, 0`,
		req.Token, req.Holder, req.TTL.Milliseconds())
	l, err := d.claim(ctx, e, req.Cluster, workerID, req.Token, rows, stmt, args...)
	if err != nil {
		return workerlease.Lease{}, err
	}
	isNew := unmarked
	if isNew {
		// Had every row been deleted since create looked, the mark just
		// made would prove nothing.
		genesis, err := d.hasGenesis(ctx, e)
		isNew = err == nil && genesis
	}
	l.NoHistory = !isNew
	return l, nil
}

// claim runs one granting statement, which must affect rows rows (an
// insert may bring the worker ID's mark along); its rows-affected alone
// proves the grant (on MySQL and PostgreSQL it commits on its own: a
// transaction around it could be aborted silently on a multi-primary
// cluster). The row is then read for the values the database set
// (expires_at by its clock, last_timestamp_ms, the new holder's floor); a
// token that is no longer ours there means the lease expired and was taken
// over already, and nothing was won. errLostRace when the statement matched
// nothing, hit a row another caller just wrote, or the lease is gone.
func (d *db) claim(ctx context.Context, e sqlx.ExtContext, cluster string, workerID int64, token string, rows int64, stmt string, args ...any) (workerlease.Lease, error) {
	ok, err := execRows(ctx, e, rows, stmt, args...)
	switch {
	case d.lostRace(err), err == nil && !ok:
		return workerlease.Lease{}, errLostRace
	case err != nil:
		return workerlease.Lease{}, err
	}
	var row leaseRow
	found, err := d.readLease(ctx, e, &row, cluster, workerID)
	switch {
	case err != nil:
		return workerlease.Lease{}, err
	case !found || row.Token != token:
		return workerlease.Lease{}, errLostRace
	}
	return row.lease(cluster, workerID), nil
}

// Renew extends the lease to the database's now + ttl and raises
// last_timestamp_ms to lastTimestampMS if that is larger, by one
// compare-and-set statement on a token whose lease has not expired, which
// commits on its own and alone proves the renewal. Errors:
// workerlease.ErrNotAssigned, workerlease.ErrTokenMismatch,
// workerlease.ErrLeaseExpired.
func (d *db) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (workerlease.Lease, error) {
	var row leaseRow
	err := d.retryRaces(ctx, "renew", func() error {
		ok, err := execOne(ctx, d.x, d.q(`UPDATE worker_leases
			SET expires_at = {now+ms}, last_timestamp_ms = {greatest}(last_timestamp_ms, ?)
			WHERE cluster = ? AND worker_id = ? AND token = ? AND expires_at > {now}`),
			ttl.Milliseconds(), lastTimestampMS, cluster, workerID, token)
		if err != nil {
			return err
		}
		found, err := d.readLease(ctx, d.x, &row, cluster, workerID)
		switch {
		case err != nil:
			return err
		case ok && row.Token == token:
			return nil
		case ok:
			// Renewed, yet the row now names another holder: the read
			// came from a copy that lags. Claim nothing.
			return workerlease.ErrTokenMismatch
		}
		refused := conflict(found, row.Token, token)
		if err := d.keepHistory(ctx, d.x, refused, cluster, workerID, token, lastTimestampMS); err != nil {
			return err
		}
		return refused
	})
	if err != nil {
		return workerlease.Lease{}, fmt.Errorf("renew worker ID %d in cluster %q: %w", workerID, cluster, err)
	}
	return row.lease(cluster, workerID), nil
}

// Release frees the worker ID by compare-and-set on a token whose lease has
// not expired, raising last_timestamp_ms as Renew does, so the next holder
// starts after it. Errors as Renew.
func (d *db) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	err := d.retryRaces(ctx, "release", func() error {
		return d.release(ctx, cluster, workerID, token, lastTimestampMS)
	})
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
	found, err := d.readLease(ctx, d.x, &row, cluster, workerID)
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
func (d *db) readLease(ctx context.Context, q sqlx.QueryerContext, row *leaseRow, cluster string, workerID int64) (bool, error) {
	err := sqlx.GetContext(ctx, q, row, d.q(`SELECT token, holder, expires_at, last_timestamp_ms
		FROM worker_leases WHERE cluster = ? AND worker_id = ?`), cluster, workerID)
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
