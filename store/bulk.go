package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/segment"
)

// createChunk is how many rows CreateTags writes per transaction, in one
// INSERT: the one round trip and (on SQLite) the one sync to disk a
// thousand tags cost, with at most ten arguments a row, well under every
// driver's limit on them (SQLite's 32,766, PostgreSQL's 65,535).
const createChunk = 1000

// CreateTags inserts the rows of tags as CreateTag inserts one, in chunks
// of createChunk rows, each one transaction: it reads which of the
// chunk's tags exist, then inserts the others by one multi-row INSERT,
// all or none of them. A tag that exists is left as it is, and not
// written: created[i] reports whether tags[i] was. A tag made by another
// writer between the read and the insert is a lost race, and the chunk is
// tried again from the read.
//
// Every row is checked before anything is written, as CreateTag checks one
// (segment.CheckRow, the format_spec column, the columns and table a
// format needs), and no tag may be given twice: the first row at fault
// refuses the whole call, its error naming the row ("tags[3]"). On any
// other error, created covers the chunks committed before it (a multiple
// of createChunk rows, from tags[0]), which are written for good.
func (d *db) CreateTags(ctx context.Context, tags []segment.Tag) (created []bool, err error) {
	seen := make(map[string]int, len(tags))
	for i, t := range tags {
		if refused := checkNewRow(t); refused != nil {
			return nil, fmt.Errorf("create tags: tags[%d] (%q): %w", i, t.AppTag, refused)
		}
		if j, ok := seen[t.AppTag]; ok {
			return nil, fmt.Errorf("create tags: tags[%d] repeats the app_tag of tags[%d] (%q)", i, j, t.AppTag)
		}
		seen[t.AppTag] = i
	}
	missing, err := d.missingColumns(ctx)
	if err == nil {
		err = d.canKeep(ctx, missing, tags...)
	}
	if err != nil {
		return nil, fmt.Errorf("create tags: %w", err)
	}
	cols := columnsOf(missing)
	created = make([]bool, 0, len(tags))
	for from := 0; from < len(tags); from += createChunk {
		chunk := tags[from:min(from+createChunk, len(tags))]
		var made []bool
		err := d.retryRaces(ctx, "create", func() (err error) {
			made, err = d.createChunk(ctx, chunk, cols)
			return err
		})
		if err != nil {
			return created, fmt.Errorf("create tags: tags[%d] to tags[%d]: %w", from, from+len(chunk)-1, err)
		}
		created = append(created, made...)
	}
	return created, nil
}

// createChunk inserts the tags of chunk that do not exist, in one
// transaction, and reports which it inserted.
func (d *db) createChunk(ctx context.Context, chunk []segment.Tag, cols segmentColumns) (made []bool, err error) {
	names := make([]any, len(chunk))
	for i, t := range chunk {
		names[i] = t.AppTag
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ")
	err = d.inTx(ctx, func(tx *sqlx.Tx) error {
		var have []string
		if err := tx.SelectContext(ctx, &have, d.q(`SELECT app_tag FROM segments WHERE app_tag IN (`+marks+`)`), names...); err != nil {
			return err
		}
		exists := make(map[string]bool, len(have))
		for _, h := range have {
			exists[h] = true
		}
		made = make([]bool, len(chunk))
		var args []any
		n := 0
		for i, t := range chunk {
			if !exists[t.AppTag] {
				made[i] = true
				args = append(args, insertArgs(t, cols)...)
				n++
			}
		}
		if n == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, d.q(insertTags(cols, n)), args...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return made, nil
}
