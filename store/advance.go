package store

import (
	"context"
	"fmt"
	"math"

	"github.com/idalloc/idalloc/segment"
)

// AdvanceTag moves tag's max_id forward by by (idalloc advance, after a
// restore): the same read and compare-and-set as a Fetch of that size,
// retried from the new value when another writer moved the row in between,
// so it never lowers max_id and never overlaps a range someone fetched. It
// returns the max_id it moved from and to. Errors: segment.ErrUnknownTag,
// segment.ErrExhausted (past math.MaxInt64), a by below 1.
func (d *db) AdvanceTag(ctx context.Context, tag string, by int64) (from, to int64, err error) {
	if by < 1 {
		return 0, 0, fmt.Errorf("advance segment %q: by %d is below 1", tag, by)
	}
	var f segment.Fetched
	err = d.retryRaces(ctx, "advance", func() (err error) {
		f, err = d.tryFetch(ctx, tag, math.MaxInt64, by, true)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("advance segment %q: %w", tag, err)
	}
	return f.MaxID - f.Size, f.MaxID, nil
}

// AdvancePeriod moves the counter of tag's period stamp forward by by
// (idalloc advance, after a restore), as a FetchPeriod of that size does:
// a period without a row gets one at start-1 first (a restore from before
// the period began has none, while numbers of it may have been issued),
// the move stops at limit, and it is one compare-and-set on the value
// read, retried after a lost race, so it never lowers the counter and
// never overlaps a range someone fetched. It returns the counter it moved
// from and to. Which periods to move is the caller's choice, since only
// the tag's settings say which stamp is current: the one being issued
// now, and the one before it while an instance may still finish it.
// Errors: segment.ErrUnknownTag, segment.ErrExhausted (the counter is at
// limit already: nothing of the period is left to repeat),
// ErrMissingTables, a by or start below 1.
func (d *db) AdvancePeriod(ctx context.Context, tag string, stamp, start, limit, by int64) (from, to int64, err error) {
	if by < 1 {
		return 0, 0, fmt.Errorf("advance period %d of %q: by %d is below 1", stamp, tag, by)
	}
	err = checkStart(start)
	var f segment.Fetched
	if err == nil {
		err = d.retryRaces(ctx, "advance", func() (err error) {
			f, err = d.tryFetchPeriod(ctx, tag, stamp, start, limit, by)
			return err
		})
	}
	if err != nil {
		return 0, 0, fmt.Errorf("advance period %d of %q: %w", stamp, tag, d.periodsMissing(ctx, err))
	}
	return f.MaxID - f.Size, f.MaxID, nil
}

// AdvanceLeases raises the last_timestamp_ms of every worker ID of every
// cluster to at least toMS, so that the next holder of each starts after
// it (idalloc advance, after a restore), and removes the genesis row and
// the worker IDs' marks (genesis.go). Each row moves by a
// compare-and-set on the value read, read again when a holder raised it
// in between, and is never lowered; a lease stays held. With dryRun
// nothing is written. each is called once per row with the value before
// and after (the same when it was at or past toMS already).
func (d *db) AdvanceLeases(ctx context.Context, toMS int64, dryRun bool, each func(cluster string, workerID, fromMS, toMS int64)) error {
	rows, err := d.LeaseTimestamps(ctx)
	if err != nil {
		return fmt.Errorf("advance leases: %w", err)
	}
	if !dryRun {
		// A restored table may lack the rows of leases granted after the
		// backup, whose holders may still run: from now on a worker ID
		// with no row is not taken to be new, and its first grant waits.
		if _, err := d.x.ExecContext(ctx, d.q(`DELETE FROM worker_leases WHERE cluster = ''`)); err != nil {
			return fmt.Errorf("advance leases: remove the genesis row and the marks: %w", err)
		}
	}
	for _, r := range rows {
		from := r.LastTimestampMS
		if !dryRun && from < toMS {
			if from, err = d.raiseLease(ctx, r, toMS); err != nil {
				return fmt.Errorf("advance lease of worker ID %d in cluster %q: %w", r.WorkerID, r.Cluster, err)
			}
		}
		each(r.Cluster, r.WorkerID, from, max(from, toMS))
	}
	return nil
}

// raiseLease moves lt's row to toMS from the value read, reading again
// after each lost race; it returns the value it moved from, which is at or
// past toMS when a holder got there first.
func (d *db) raiseLease(ctx context.Context, lt LeaseTimestamp, toMS int64) (int64, error) {
	cur := lt.LastTimestampMS
	err := d.retryRaces(ctx, "advance", func() error {
		if cur >= toMS {
			return nil
		}
		ok, err := execOne(ctx, d.x, d.q(`UPDATE worker_leases SET last_timestamp_ms = ?
			WHERE cluster = ? AND worker_id = ? AND last_timestamp_ms = ?`), toMS, lt.Cluster, lt.WorkerID, cur)
		if err != nil || ok {
			return err
		}
		err = d.x.GetContext(ctx, &cur, d.q(`SELECT last_timestamp_ms FROM worker_leases
			WHERE cluster = ? AND worker_id = ?`), lt.Cluster, lt.WorkerID)
		if err != nil {
			// Rows are never deleted, so a missing one is a fault too.
			return err
		}
		return errLostRace
	})
	if err != nil {
		return 0, err
	}
	return cur, nil
}
