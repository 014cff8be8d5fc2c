package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/idalloc/idalloc/segment"
)

// UpdateTag sets tag's step or description, or both, by one UPDATE … WHERE
// app_tag = ? that sets nothing else but update_time (so a tag-list reload
// that follows changes can see it changed): max_id is never touched, and a
// fetch racing with it keeps the range its compare-and-set proved. A step
// below 1 or a description longer than the column is refused with
// segment.CheckRow's words; the allocator's tighter rules (the step cap,
// text only) are its own, as for CreateTag. The row is then read back for
// the caller to show; it proves nothing. Errors: segment.ErrNoChange,
// segment.ErrUnknownTag, and CheckRow's.
func (d *db) UpdateTag(ctx context.Context, tag string, c segment.TagChange) (segment.Tag, error) {
	// CheckRow judges a row: the fields not changed stand in with values
	// it accepts.
	row := segment.Tag{AppTag: tag, Step: 1}
	var set []string
	var args []any
	if c.Step != nil {
		row.Step = *c.Step
		set, args = append(set, `step = ?`), append(args, *c.Step)
	}
	if c.Description != nil {
		row.Description = *c.Description
		set, args = append(set, `description = ?`), append(args, *c.Description)
	}
	if len(set) == 0 {
		return segment.Tag{}, fmt.Errorf("update tag %q: %w", tag, segment.ErrNoChange)
	}
	if refused := segment.CheckRow(row); refused != nil {
		return segment.Tag{}, fmt.Errorf("update tag %q: %w", tag, refused)
	}
	// MySQL counts the rows matched, not changed (clientFoundRows), so
	// setting the values the row has already is no miss.
	ok, err := execOne(ctx, d.x, d.q(`UPDATE segments SET `+strings.Join(set, ", ")+`, update_time = {now} WHERE app_tag = ?`),
		append(args, tag)...)
	if err == nil && !ok {
		err = segment.ErrUnknownTag
	}
	if err != nil {
		return segment.Tag{}, fmt.Errorf("update tag %q: %w", tag, err)
	}
	missing, err := d.missingColumns(ctx)
	if err != nil {
		return segment.Tag{}, fmt.Errorf("update tag %q: %w", tag, err)
	}
	rows, err := d.selectTags(ctx, selectTagColumns(columnsOf(missing))+` FROM segments WHERE app_tag = ?`, tag)
	switch {
	case err != nil:
	case len(rows) == 0: // gone since, by a hand's DELETE
		err = segment.ErrUnknownTag
	}
	if err != nil {
		return segment.Tag{}, fmt.Errorf("update tag %q: %w", tag, err)
	}
	return rows[0], nil
}
