package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idalloc/idalloc/segment"
)

var (
	_ segment.RegionStore = (*MySQL)(nil)
	_ segment.RegionStore = (*SQLite)(nil)
	_ segment.RegionStore = (*Postgres)(nil)
)

// regionTable records the region a database serves (docs/api.md §13; see
// schema.sql): one row, id 1, written by the first instance of a region
// and never changed. Like the access tables it is newer than the others
// and a start does not require it: a database without it records no
// region, which is what every database of a single region is, so only an
// instance with region.count above 1 needs it (-init-schema makes it;
// every SQLite open does).
const regionTable = "idalloc_region"

// regionRow is the row of idalloc_region.
type regionRow struct {
	Count int64 `db:"region_count"`
	ID    int64 `db:"region_id"`
}

// RegionRecord returns the region the database records, false when it
// records none: no row, or no idalloc_region table (a database made
// before it, which no region has written to).
func (d *db) RegionRecord(ctx context.Context) (segment.Region, bool, error) {
	var row regionRow
	err := d.x.GetContext(ctx, &row, d.q(`SELECT region_count, region_id FROM idalloc_region WHERE id = 1`))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return segment.Region{}, false, nil
	case err != nil:
		// Asked only after a failure, as periodsMissing does.
		if exists, qerr := d.tableExists(ctx, d.x, regionTable); qerr == nil && !exists {
			return segment.Region{}, false, nil
		}
		return segment.Region{}, false, fmt.Errorf("read the region record: %w", err)
	}
	return segment.Region{Count: row.Count, ID: row.ID}, true, nil
}

// RecordRegion records r unless a region is recorded, and returns the one
// recorded after. Two statements, each committing on its own, as
// CheckLayout's: the first instance's insert wins (a duplicate key means
// a record exists), and the row never changes after, so the read proves
// what the database serves. A database without idalloc_region is
// ErrMissingTables, naming the fix.
func (d *db) RecordRegion(ctx context.Context, r segment.Region) (segment.Region, error) {
	r = r.Normal()
	var have segment.Region
	err := d.retryRaces(ctx, "region", func() error {
		_, err := d.x.ExecContext(ctx, d.q(`INSERT INTO idalloc_region (id, region_count, region_id, recorded_at)
			VALUES (1, ?, ?, {now})`), r.Count, r.ID)
		if err != nil && !d.dialect.isDuplicate(err) {
			return err
		}
		var row regionRow
		if err := d.x.GetContext(ctx, &row, d.q(`SELECT region_count, region_id FROM idalloc_region WHERE id = 1`)); err != nil {
			return err
		}
		have = segment.Region{Count: row.Count, ID: row.ID}
		return nil
	})
	if err != nil {
		if exists, qerr := d.tableExists(ctx, d.x, regionTable); qerr == nil && !exists {
			err = d.missingTablesError([]string{regionTable})
		}
		return segment.Region{}, fmt.Errorf("record region %d of %d: %w", r.ID, r.Count, err)
	}
	return have, nil
}

// IssuedTag returns the first tag, by name, whose IDs the database has
// issued (segment.RegionStore): a segments row whose max_id is above its
// start − 1, or whose dated period counter is; a row without a start
// (made before the column, its first ID unknown) counts from max_id 0. A
// database without segment_periods has no dated counter to count.
func (d *db) IssuedTag(ctx context.Context) (string, bool, error) {
	missing, err := d.missingColumns(ctx)
	if err != nil {
		return "", false, fmt.Errorf("read the issued tags: %w", err)
	}
	before := "COALESCE(s.start, 1) - 1" // the high-water mark of a row that issued nothing
	if !columnsOf(missing).start {
		before = "0"
	}
	var tags []string
	err = d.x.SelectContext(ctx, &tags, d.q(`SELECT s.app_tag FROM segments s
		WHERE s.max_id > `+before+` ORDER BY s.app_tag LIMIT 1`))
	if err == nil && len(tags) == 0 {
		err = d.x.SelectContext(ctx, &tags, d.q(`SELECT s.app_tag FROM segment_periods p
			JOIN segments s ON s.app_tag = p.app_tag WHERE p.max_id > `+before+` ORDER BY s.app_tag LIMIT 1`))
		if err != nil {
			if exists, qerr := d.tableExists(ctx, d.x, periodsTable); qerr == nil && !exists {
				err = nil
			}
		}
	}
	if err != nil {
		return "", false, fmt.Errorf("read the issued tags: %w", err)
	}
	if len(tags) == 0 {
		return "", false, nil
	}
	return tags[0], true, nil
}

// RegionRecord returns the region the source records, false when it
// records none (no idalloc_region table: a database made before it, or
// Leaf's or Tinyid's).
func (r *ReadOnly) RegionRecord(ctx context.Context) (segment.Region, bool, error) {
	if !r.tables[regionTable] {
		return segment.Region{}, false, nil
	}
	return r.d.RegionRecord(ctx)
}
