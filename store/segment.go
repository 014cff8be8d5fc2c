package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/idalloc/idalloc/segment"
	"github.com/jmoiron/sqlx"
)

// Fetch reserves the next range of tag in one transaction: it locks the row
// and reads its step, adds delta to max_id unless that would pass
// math.MaxInt64, reads max_id back, and commits. The range is returned only
// after the commit succeeded. Errors: segment.ErrUnknownTag, segment.ErrExhausted.
func (d *db) Fetch(ctx context.Context, tag string, step int64) (segment.Fetched, error) {
	var f segment.Fetched
	err := d.inTx(ctx, func(tx *sqlx.Tx) error {
		var rowStep int64
		err := tx.GetContext(ctx, &rowStep, d.q(`SELECT step FROM segments WHERE app_tag = ? {for update}`), tag)
		if errors.Is(err, sql.ErrNoRows) {
			return segment.ErrUnknownTag
		}
		if err != nil {
			return err
		}
		delta := step
		if delta <= 0 {
			delta = rowStep
		}
		if delta <= 0 {
			// A hand-edited row; a zero-size range would stall the allocator.
			return fmt.Errorf("row step %d is not positive", rowStep)
		}
		// The row is locked, so no match means only the overflow guard failed.
		ok, err := execOne(ctx, tx, d.q(`UPDATE segments SET max_id = max_id + ?, update_time = {now}
			WHERE app_tag = ? AND max_id <= 9223372036854775807 - ?`), delta, tag, delta)
		if err != nil {
			return err
		}
		if !ok {
			return segment.ErrExhausted
		}
		if err := tx.GetContext(ctx, &f.MaxID, `SELECT max_id FROM segments WHERE app_tag = ?`, tag); err != nil {
			return err
		}
		f.Size, f.Step = delta, rowStep
		return nil
	})
	if err != nil {
		return segment.Fetched{}, fmt.Errorf("fetch segment %q: %w", tag, err)
	}
	return f, nil
}

// GiveBack sets max_id of tag to newMax only if it still is oldMax.
func (d *db) GiveBack(ctx context.Context, tag string, oldMax, newMax int64) (bool, error) {
	ok, err := execOne(ctx, d.x, d.q(`UPDATE segments SET max_id = ?, update_time = {now}
		WHERE app_tag = ? AND max_id = ?`), newMax, tag, oldMax)
	if err != nil {
		return false, fmt.Errorf("give back segment %q: %w", tag, err)
	}
	return ok, nil
}

// tagRow is one segments row as scanned.
type tagRow struct {
	AppTag      string `db:"app_tag"`
	MaxID       int64  `db:"max_id"`
	Step        int64  `db:"step"`
	Description string `db:"description"`
	UpdateTime  dbTime `db:"update_time"`
}

// Tags lists every row, ordered by app_tag (byte order on both drivers).
func (d *db) Tags(ctx context.Context) ([]segment.Tag, error) {
	var rows []tagRow
	// COALESCE: a seed-style table may allow NULL descriptions.
	err := d.x.SelectContext(ctx, &rows, `SELECT app_tag, max_id, step,
		COALESCE(description, '') AS description, update_time FROM segments ORDER BY app_tag`)
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	tags := make([]segment.Tag, len(rows))
	for i, r := range rows {
		tags[i] = segment.Tag{
			AppTag:      r.AppTag,
			MaxID:       r.MaxID,
			Step:        r.Step,
			Description: r.Description,
			UpdateTime:  r.UpdateTime.Time,
		}
	}
	return tags, nil
}

// CreateTag inserts a row whose first fetched ID is t.Start (0 means 1).
// Errors: segment.ErrInvalidTag, segment.ErrInvalidStep (step below 1 or a
// negative start), segment.ErrTagExists; a description longer than 256
// characters is refused with a plain error. The caller enforces the step cap.
func (d *db) CreateTag(ctx context.Context, t segment.Tag) error {
	start := t.Start
	if start == 0 {
		start = 1
	}
	switch {
	case !segment.ValidTag(t.AppTag):
		return fmt.Errorf("create tag %q: %w", t.AppTag, segment.ErrInvalidTag)
	case t.Step < 1 || start < 1:
		return fmt.Errorf("create tag %q: step %d, start %d: %w", t.AppTag, t.Step, t.Start, segment.ErrInvalidStep)
	case utf8.RuneCountInString(t.Description) > segment.MaxDescription:
		return fmt.Errorf("create tag %q: description longer than %d characters", t.AppTag, segment.MaxDescription)
	}
	_, err := d.x.ExecContext(ctx, d.q(`INSERT INTO segments (app_tag, max_id, step, description, update_time)
		VALUES (?, ?, ?, ?, {now})`), t.AppTag, start-1, t.Step, t.Description)
	if d.dialect.isDuplicate(err) {
		err = segment.ErrTagExists
	}
	if err != nil {
		return fmt.Errorf("create tag %q: %w", t.AppTag, err)
	}
	return nil
}
