package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/idalloc/idalloc/segment"
)

// Fetch reserves the next range of tag: it reads the row's max_id and step,
// then moves max_id from the value read to min(max_id+delta, limit) by one
// compare-and-set statement that commits on its own. Exactly one row matched
// proves the range (old, new] is this caller's, whatever happened around the
// statement; no lock is taken and nothing is read back. A statement that
// matched nothing, or that the database refused as a lost race (MySQL's
// 1213 or 1205, PostgreSQL's 40001 or 40P01),
// means another writer moved the row: Fetch reads again at once, a bounded
// number of times. Errors: segment.ErrUnknownTag, segment.ErrExhausted
// (max_id at limit or past it: nothing is written).
func (d *db) Fetch(ctx context.Context, tag string, limit, step int64) (segment.Fetched, error) {
	var f segment.Fetched
	err := d.retryRaces(ctx, "fetch", func() (err error) {
		f, err = d.tryFetch(ctx, tag, limit, step, false)
		return err
	})
	if err != nil {
		return segment.Fetched{}, fmt.Errorf("fetch segment %q: %w", tag, err)
	}
	return f, nil
}

// tryFetch is one read and compare-and-set; errLostRace when another writer
// moved max_id in between. whole refuses a move that would pass limit
// (ErrExhausted) rather than stop at it.
func (d *db) tryFetch(ctx context.Context, tag string, limit, step int64, whole bool) (segment.Fetched, error) {
	var row struct {
		MaxID int64 `db:"max_id"`
		Step  int64 `db:"step"`
	}
	err := d.x.GetContext(ctx, &row, d.q(`SELECT max_id, step FROM segments WHERE app_tag = ?`), tag)
	if errors.Is(err, sql.ErrNoRows) {
		return segment.Fetched{}, segment.ErrUnknownTag
	}
	if err != nil {
		return segment.Fetched{}, err
	}
	delta := step
	if delta <= 0 {
		delta = row.Step
	}
	if delta <= 0 {
		// A hand-edited row; a zero-size range would stall the allocator.
		return segment.Fetched{}, fmt.Errorf("row step %d is not positive", row.Step)
	}
	switch {
	case row.MaxID < 0:
		// Hand-edited too: every row starts at start-1 ≥ 0.
		return segment.Fetched{}, fmt.Errorf("max_id %d is negative", row.MaxID)
	case row.MaxID >= limit, whole && delta > limit-row.MaxID:
		return segment.Fetched{}, segment.ErrExhausted
	}
	newMax := limit
	if delta < limit-row.MaxID { // no overflow: 0 ≤ max_id < limit
		newMax = row.MaxID + delta
	}
	ok, err := execOne(ctx, d.x, d.q(`UPDATE segments SET max_id = ?, update_time = {now}
		WHERE app_tag = ? AND max_id = ?`), newMax, tag, row.MaxID)
	if err != nil {
		return segment.Fetched{}, err
	}
	if !ok {
		return segment.Fetched{}, errLostRace
	}
	return segment.Fetched{MaxID: newMax, Size: newMax - row.MaxID, Step: row.Step}, nil
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

// tagRow is one segments row as scanned. A query without the added
// columns (a table from before them, Leaf's) leaves them zero: sequential,
// start unknown.
type tagRow struct {
	AppTag      string        `db:"app_tag"`
	MaxID       int64         `db:"max_id"`
	Step        int64         `db:"step"`
	Description string        `db:"description"`
	UpdateTime  dbTime        `db:"update_time"`
	Format      string        `db:"format"`
	Length      int           `db:"length"`
	FormatKey   []byte        `db:"format_key"`
	Start       sql.NullInt64 `db:"start"`
	FormatSpec  string        `db:"format_spec"`
}

// tagsQuery lists the segments table, with the added columns it has.
func tagsQuery(cols segmentColumns) string {
	return selectTagColumns(cols) + ` FROM segments ORDER BY app_tag`
}

// selectTagColumns selects the columns of tagRow that cols has.
// COALESCE: a seed-style table may allow NULL descriptions.
func selectTagColumns(cols segmentColumns) string {
	q := `SELECT app_tag, max_id, step, COALESCE(description, '') AS description, update_time`
	if cols.formats {
		q += `, format, length, format_key`
	}
	if cols.start {
		q += `, start`
	}
	if cols.formatSpec {
		q += `, format_spec`
	}
	return q
}

// Tags lists every row, ordered by app_tag (byte order on every driver),
// with its format, a scrambled tag's key, a dated tag's FormatSpec and its
// start; a table without the format columns lists every row as sequential,
// a row without a start (made before the column) has Start 0, and one
// without format_spec has FormatSpec "".
func (d *db) Tags(ctx context.Context) ([]segment.Tag, error) {
	missing, err := d.missingColumns(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	return d.selectTags(ctx, tagsQuery(columnsOf(missing)))
}

// selectTags runs query with args, which selects the columns of tagRow.
func (d *db) selectTags(ctx context.Context, query string, args ...any) ([]segment.Tag, error) {
	var rows []tagRow
	err := d.x.SelectContext(ctx, &rows, d.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	tags := make([]segment.Tag, len(rows))
	for i, r := range rows {
		tags[i] = segment.Tag{
			AppTag:      r.AppTag,
			MaxID:       r.MaxID,
			Step:        r.Step,
			Start:       r.Start.Int64,
			Description: r.Description,
			UpdateTime:  r.UpdateTime.Time,
			Format:      segment.Format(r.Format),
			Length:      r.Length,
			FormatKey:   r.FormatKey,
			FormatSpec:  r.FormatSpec,
		}
		if tags[i].Format == "" {
			tags[i].Format = segment.FormatSequential
		}
	}
	return tags, nil
}

// CreateTag inserts a row whose first fetched number is t.Start (0 means
// 1), recorded as its start, with t's format, length, key and FormatSpec
// (Format "" is sequential); t.MaxID is not read. It refuses what no row may hold
// with segment.CheckRow's errors and words (segment.ErrInvalidTag,
// segment.ErrInvalidStep for a step below 1, segment.ErrInvalidStart for
// a start below 1, segment.ErrInvalidDescription for one longer than the
// column, and what segment.CheckFormat refuses: a format, length or key
// the allocator cannot serve); segment.ErrTagExists; and segment.ErrFormatUnsupported
// for a fixed_length or scrambled tag on a MySQL or PostgreSQL table
// without the format columns, naming the ALTER TABLE that adds them, and
// for a dated tag (or any with a FormatSpec) on a database without
// format_spec or segment_periods, naming the statements that add them. A
// FormatSpec longer than the column (maxFormatSpec) is a fault. On a
// table without the start column the row's start is left unknown. The allocator's limits
// (segment.CheckNewTag: the step cap, starts up to segment.MaxUsableID or
// within the format's digits) are the caller's: a migration or a test may
// create rows beyond them.
func (d *db) CreateTag(ctx context.Context, t segment.Tag) error {
	if refused := checkNewRow(t); refused != nil {
		return fmt.Errorf("create tag %q: %w", t.AppTag, refused)
	}
	missing, err := d.missingColumns(ctx)
	cols := columnsOf(missing)
	if err == nil {
		err = d.canKeep(ctx, missing, t)
	}
	if err == nil {
		_, err = d.x.ExecContext(ctx, d.q(insertTags(cols, 1)), insertArgs(t, cols)...)
	}
	if d.dialect.isDuplicate(err) {
		err = segment.ErrTagExists
	}
	if err != nil {
		return fmt.Errorf("create tag %q: %w", t.AppTag, err)
	}
	return nil
}

// firstID is the first ID of a row made of t: its Start, 0 meaning 1.
func firstID(t segment.Tag) int64 { return cmp.Or(t.Start, 1) }

// checkNewRow refuses a t no row may hold (segment.CheckRow, as the row
// CreateTag would make of it) and a FormatSpec longer than the column.
func checkNewRow(t segment.Tag) error {
	row := t
	row.Start = firstID(t)
	row.MaxID = row.Start - 1
	if refused := segment.CheckRow(row); refused != nil {
		return refused
	}
	if n := utf8.RuneCountInString(t.FormatSpec); n > maxFormatSpec {
		return fmt.Errorf("format_spec of %d characters is longer than the column's %d", n, maxFormatSpec)
	}
	return nil
}

// canKeep reports whether a segments table that lacks the columns missing
// can keep every tag of tags: a dated one (or any with a FormatSpec) needs
// format_spec and segment_periods, checked before the insert, which on a
// table without format_spec would drop the settings and without
// segment_periods make a tag that can never fetch; a fixed_length or
// scrambled one needs the format columns. The refusal is
// segment.ErrFormatUnsupported naming what adds them.
func (d *db) canKeep(ctx context.Context, missing []addedColumn, tags ...segment.Tag) error {
	dated := slices.ContainsFunc(tags, func(t segment.Tag) bool { return t.Format == segment.FormatDated || t.FormatSpec != "" })
	formatted := slices.ContainsFunc(tags, func(t segment.Tag) bool { return t.Format != "" && t.Format != segment.FormatSequential })
	switch {
	case dated:
		return d.canKeepDated(ctx, missing)
	case formatted && !columnsOf(missing).formats:
		return formatsUnsupported(d.dialect, missing)
	}
	return nil
}

// insertTags is the INSERT of n rows into a segments table with cols,
// each row's values as insertArgs gives them.
func insertTags(cols segmentColumns, n int) string {
	names, values := `app_tag, max_id, step, description, update_time`, `?, ?, ?, ?, {now}`
	if cols.formats {
		names, values = names+`, format, length, format_key`, values+`, ?, ?, ?`
	}
	if cols.start {
		names, values = names+`, start`, values+`, ?`
	}
	if cols.formatSpec {
		names, values = names+`, format_spec`, values+`, ?`
	}
	rows := make([]string, n)
	for i := range rows {
		rows[i] = `(` + values + `)`
	}
	return `INSERT INTO segments (` + names + `) VALUES ` + strings.Join(rows, `, `)
}

// insertArgs are insertTags' arguments for the row of t.
func insertArgs(t segment.Tag, cols segmentColumns) []any {
	start := firstID(t)
	args := []any{t.AppTag, start - 1, t.Step, t.Description}
	if cols.formats {
		var key any // NULL unless scrambled
		if len(t.FormatKey) > 0 {
			key = t.FormatKey
		}
		args = append(args, string(cmp.Or(t.Format, segment.FormatSequential)), t.Length, key)
	}
	if cols.start {
		args = append(args, start)
	}
	if cols.formatSpec {
		args = append(args, t.FormatSpec)
	}
	return args
}
