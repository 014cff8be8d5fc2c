package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// The counters of dated tags: one segment_periods row per (tag, stamp),
// kept by the same rule as segments.max_id. A fetch reads the counter, the
// tag's step and the database's clock in one statement, then moves the
// counter by one compare-and-set that commits on its own (UPDATE … WHERE
// app_tag = ? AND stamp = ? AND max_id = old), whose one matched row alone
// proves the range; a lost race reads again at once (retryRaces). A
// period's row is made on its first fetch, by an insert at start-1 that
// another instance's insert may beat (a duplicate key, harmless: the row
// is there either way) and that decides nothing: the compare-and-set that
// follows does. The store never reads a stamp: it is the period's key,
// chosen by the caller (package segment/dated).

// periodRead is the one statement that reads a period's counter (NULL when
// the period has no row yet), its tag's step, and the database's clock.
// From segments, so that a tag without a row is told apart from a period
// without one.
const periodRead = `SELECT s.step, p.max_id, {now} AS now FROM segments s
	LEFT JOIN segment_periods p ON p.app_tag = s.app_tag AND p.stamp = ?
	WHERE s.app_tag = ?`

// periodCAS moves a counter from the value read, and only from it.
const periodCAS = `UPDATE segment_periods SET max_id = ?, update_time = {now}
	WHERE app_tag = ? AND stamp = ? AND max_id = ?`

// periodRow is what periodRead returns.
type periodRow struct {
	Step  int64         `db:"step"`
	MaxID sql.NullInt64 `db:"max_id"`
	Now   dbTime        `db:"now"`
}

// FetchPeriod reserves the next range of tag's counter for the period
// stamp, as segment.PeriodStore says: a period without a row starts at
// start-1; the counter moves from max_id to min(max_id+delta, limit)
// (delta is step when step > 0, else the tag's row step) by one
// compare-and-set, retried at once after a lost race; Fetched.Now is the
// database's clock read with the counter. Errors: segment.ErrUnknownTag
// (no segments row; no counter row is made), segment.ErrExhausted (the
// counter is at limit or past it), ErrMissingTables (a database without
// segment_periods), a start below 1.
func (d *db) FetchPeriod(ctx context.Context, tag string, stamp, start, limit, step int64) (segment.Fetched, error) {
	var f segment.Fetched
	err := checkStart(start)
	if err == nil {
		err = d.retryRaces(ctx, "fetch_period", func() (err error) {
			f, err = d.tryFetchPeriod(ctx, tag, stamp, start, limit, step)
			return err
		})
	}
	if err != nil {
		return segment.Fetched{}, fmt.Errorf("fetch period %d of %q: %w", stamp, tag, d.periodsMissing(ctx, err))
	}
	return f, nil
}

// checkStart refuses a first sequence number below 1: its row would start
// below 0, which no counter of the store holds.
func checkStart(start int64) error {
	if start < 1 {
		return fmt.Errorf("start %d is below 1", start)
	}
	return nil
}

// tryFetchPeriod is one read and compare-and-set; errLostRace when another
// writer moved the counter in between.
func (d *db) tryFetchPeriod(ctx context.Context, tag string, stamp, start, limit, step int64) (segment.Fetched, error) {
	row, err := d.readPeriod(ctx, tag, stamp, start-1)
	if err != nil {
		return segment.Fetched{}, err
	}
	delta := step
	if delta <= 0 {
		delta = row.Step
	}
	cur := row.MaxID.Int64
	switch {
	case delta <= 0:
		// A hand-edited row; a zero-size range would stall the allocator.
		return segment.Fetched{}, fmt.Errorf("row step %d is not positive", row.Step)
	case cur < 0:
		// Hand-edited too: every counter starts at start-1 ≥ 0.
		return segment.Fetched{}, fmt.Errorf("counter %d is negative", cur)
	case cur >= limit:
		return segment.Fetched{}, segment.ErrExhausted
	}
	newMax := limit
	if delta < limit-cur { // no overflow: 0 ≤ cur < limit
		newMax = cur + delta
	}
	ok, err := execOne(ctx, d.x, d.q(periodCAS), newMax, tag, stamp, cur)
	if err != nil {
		return segment.Fetched{}, err
	}
	if !ok {
		return segment.Fetched{}, errLostRace
	}
	return segment.Fetched{MaxID: newMax, Size: newMax - cur, Step: row.Step, Now: row.Now.Time}, nil
}

// readPeriod reads the counter of (tag, stamp) with periodRead, making
// the row at initial first if the period has none. Errors:
// segment.ErrUnknownTag; errLostRace when the row vanished between the
// insert and the read (an operator's DELETE), to read once more.
func (d *db) readPeriod(ctx context.Context, tag string, stamp, initial int64) (periodRow, error) {
	var row periodRow
	for made := false; ; made = true {
		err := d.x.GetContext(ctx, &row, d.q(periodRead), stamp, tag)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return row, segment.ErrUnknownTag
		case err != nil:
			return row, err
		case row.MaxID.Valid:
			return row, nil
		case made:
			return row, errLostRace
		}
		// The tag exists (its row was read) and the period has no row:
		// make it. A duplicate means another writer made it first, which
		// is as good; the read after either sees it.
		_, err = d.x.ExecContext(ctx, d.q(`INSERT INTO segment_periods (app_tag, stamp, max_id, update_time)
			VALUES (?, ?, ?, {now})`), tag, stamp, initial)
		if err != nil && !d.dialect.isDuplicate(err) {
			return row, err
		}
	}
}

// GiveBackPeriod sets the counter of (tag, stamp) to newMax only if it
// still is oldMax (compare-and-set), reporting whether it did; false for a
// period without a row.
func (d *db) GiveBackPeriod(ctx context.Context, tag string, stamp, oldMax, newMax int64) (bool, error) {
	ok, err := execOne(ctx, d.x, d.q(periodCAS), newMax, tag, stamp, oldMax)
	if err != nil {
		return false, fmt.Errorf("give back period %d of %q: %w", stamp, tag, d.periodsMissing(ctx, err))
	}
	return ok, nil
}

// Now reads the database's clock, as every statement of the store reads
// it ({now}), in UTC.
func (d *db) Now(ctx context.Context) (time.Time, error) {
	var now dbTime
	if err := d.x.GetContext(ctx, &now, d.q(`SELECT {now}`)); err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	return now.Time, nil
}
