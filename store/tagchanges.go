package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// A tag list follows the store by update_time: every statement that writes
// a segments row sets it to the store's clock ({now}): Fetch, GiveBack,
// CreateTag, CreateTags, UpdateTag and idalloc advance (and MySQL's
// ON UPDATE does so for any write, an operator's too). So the rows changed
// since a moment are the rows whose update_time is at or after it, which
// the index segments_update_time finds without reading the others:
// an instance reloading its tag list asks for them and reads what changed,
// not every row.
//
// The index is in every dialect's CREATE TABLE (or beside it);
// -init-schema adds it to a table made before it (upgradeUpdateTimeIndex
// on MySQL, CREATE INDEX IF NOT EXISTS on PostgreSQL and SQLite). A table
// without it answers the same rows, by reading the whole table.

// updateTimeIndex is the index on segments.update_time.
const updateTimeIndex = "segments_update_time"

// TagsSince lists, as Tags lists rows and in app_tag order, the rows whose
// update_time is at or after since (every row when since is zero: rows
// whose update_time is NULL, on a seed-style table, only then) and whose
// app_tag sorts after after (every one when after is ""), at most limit
// of them (every one when limit is 0); and asOf, the store's clock read
// just before it looked. A caller reads a long answer in pages, each from
// the last app_tag of the one before.
//
// Asking next from asOf misses no write that commits after this look but
// one whose statement read the clock before asOf: a write is seen once it
// has committed, and its update_time is the clock when its statement ran,
// so one that commits late carries a time already behind the next look.
// The caller asks from asOf less a margin for those (segment.Allocator
// does).
func (d *db) TagsSince(ctx context.Context, since time.Time, after string, limit int) (rows []segment.Tag, asOf time.Time, err error) {
	asOf, err = d.Now(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list changed tags: %w", err)
	}
	missing, err := d.missingColumns(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list changed tags: %w", err)
	}
	var where []string
	var args []any
	if !since.IsZero() {
		where, args = append(where, `update_time >= ?`), append(args, d.dialect.timeArg(since))
	}
	if after != "" {
		where, args = append(where, `app_tag > ?`), append(args, after)
	}
	q := selectTagColumns(columnsOf(missing)) + ` FROM segments`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY app_tag`
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	if rows, err = d.selectTags(ctx, q, args...); err != nil {
		return nil, time.Time{}, err
	}
	return rows, asOf, nil
}

// timeArg values: a time as an argument compared with a time column, in
// the column's representation.
func sqliteTime(t time.Time) any { return t.UnixMilli() } // Unix milliseconds, as sqliteNow
func utcTime(t time.Time) any    { return t.UTC() }       // DATETIME(3) in UTC (MySQL's session zone), TIMESTAMPTZ

// mysqlIndexQuery counts the indexes of segments that begin with
// update_time: the one -init-schema adds, or one an operator made.
const mysqlIndexQuery = `SELECT COUNT(*) FROM information_schema.STATISTICS
	WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'segments'
		AND LOWER(COLUMN_NAME) = 'update_time' AND SEQ_IN_INDEX = 1`

// mysqlAddIndex adds the index to a MySQL segments table; InnoDB builds it
// in place, without blocking fetches.
const mysqlAddIndex = "ALTER TABLE `segments` ADD INDEX " + updateTimeIndex + " (update_time)"

// upgradeUpdateTimeIndex adds the index on update_time to a MySQL
// segments table made before it (-init-schema), unless an index begins
// with that column already. MySQL has no CREATE INDEX IF NOT EXISTS
// (MariaDB has), hence the look first; instances running -init-schema at
// once may race to add it, and a failed ALTER is an error only if the
// index is still missing after it.
func (m *MySQL) upgradeUpdateTimeIndex(ctx context.Context, report func(string)) error {
	has := func() (bool, error) {
		var n int
		err := m.x.GetContext(ctx, &n, mysqlIndexQuery)
		return n > 0, err
	}
	ok, err := has()
	if err != nil || ok {
		return err
	}
	if _, err := m.x.ExecContext(ctx, mysqlAddIndex); err != nil {
		if ok, checkErr := has(); checkErr != nil || !ok {
			return fmt.Errorf("%s: %w", mysqlAddIndex, err)
		}
		return nil // another instance added it
	}
	report("added index " + updateTimeIndex + " (update_time) to segments")
	return nil
}
