package store

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// LeaseTimestamp is the snowflake history of one worker ID: the highest
// timestamp any of its holders reserved.
type LeaseTimestamp struct {
	Cluster         string `db:"cluster"`
	WorkerID        int64  `db:"worker_id"`
	LastTimestampMS int64  `db:"last_timestamp_ms"`
}

// LeaseTimestamps lists every worker ID's history, for moving to another
// store (idalloc migrate); the rows of cluster "" (genesis.go) are no
// worker ID's.
func (d *db) LeaseTimestamps(ctx context.Context) ([]LeaseTimestamp, error) {
	var out []LeaseTimestamp
	err := sqlx.SelectContext(ctx, d.x, &out,
		d.q(`SELECT cluster, worker_id, last_timestamp_ms FROM worker_leases WHERE cluster <> '' ORDER BY cluster, worker_id`))
	if err != nil {
		return nil, fmt.Errorf("list lease timestamps: %w", err)
	}
	return out, nil
}

// RaiseLeaseTimestamp makes lt's worker ID start after lt.LastTimestampMS for
// its next holder: the stored value is raised, never lowered, and a missing
// row is created free (released), with its mark (genesis.go), so that its
// loss is seen. A live lease is left held.
func (d *db) RaiseLeaseTimestamp(ctx context.Context, lt LeaseTimestamp) error {
	// Each statement commits on its own; an insert that finds the row
	// created meanwhile is a lost race, and the raise is tried again.
	err := d.retryRaces(ctx, "carry", func() error {
		res, err := d.x.ExecContext(ctx, d.q(`UPDATE worker_leases
			SET last_timestamp_ms = {greatest}(last_timestamp_ms, ?) WHERE cluster = ? AND worker_id = ?`),
			lt.LastTimestampMS, lt.Cluster, lt.WorkerID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		genesis, marked, err := d.readMark(ctx, d.x, lt.Cluster, lt.WorkerID)
		if err != nil {
			return err
		}
		stmt, args, _ := d.insertRow(lt.Cluster, lt.WorkerID, genesis && !marked, `'', '', {now}, ?`, lt.LastTimestampMS)
		_, err = d.x.ExecContext(ctx, stmt, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("raise lease timestamp of %s/%d: %w", lt.Cluster, lt.WorkerID, err)
	}
	return nil
}

// PeriodCounter is the counter of one dated tag's period: the highest
// sequence number handed out for the stamp.
type PeriodCounter struct {
	AppTag string `db:"app_tag"`
	Stamp  int64  `db:"stamp"`
	MaxID  int64  `db:"max_id"`
}

// Periods lists every period counter, by tag and stamp, for moving to
// another store (idalloc migrate). Errors: ErrMissingTables on a database
// without segment_periods.
func (d *db) Periods(ctx context.Context) ([]PeriodCounter, error) {
	var out []PeriodCounter
	err := sqlx.SelectContext(ctx, d.x, &out, d.q(`SELECT app_tag, stamp, max_id FROM segment_periods ORDER BY app_tag, stamp`))
	if err != nil {
		return nil, fmt.Errorf("list period counters: %w", d.periodsMissing(ctx, err))
	}
	return out, nil
}

// RaisePeriod makes pc's counter at least pc.MaxID (idalloc migrate): a
// period without a row gets one at pc.MaxID, a counter below it is moved
// there by a compare-and-set on the value read (read again after a lost
// race), and one at or above it is left alone, so it never goes down and
// never undoes a range fetched meanwhile. Errors: segment.ErrUnknownTag
// when the tag has no segments row (carry the tags first), ErrMissingTables
// on a database without segment_periods.
func (d *db) RaisePeriod(ctx context.Context, pc PeriodCounter) error {
	err := d.retryRaces(ctx, "carry", func() error {
		row, err := d.readPeriod(ctx, pc.AppTag, pc.Stamp, pc.MaxID)
		if err != nil || row.MaxID.Int64 >= pc.MaxID {
			return err
		}
		ok, err := execOne(ctx, d.x, d.q(periodCAS), pc.MaxID, pc.AppTag, pc.Stamp, row.MaxID.Int64)
		if err == nil && !ok {
			err = errLostRace
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("raise period %d of %q: %w", pc.Stamp, pc.AppTag, d.periodsMissing(ctx, err))
	}
	return nil
}
