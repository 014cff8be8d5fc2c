package store

import (
	"context"
	"fmt"
)

// leafTagsQuery reads Leaf's table, leaf_alloc(biz_tag, max_id, step,
// description, update_time), as idalloc tags. Leaf hands out the range
// [max_id - step, max_id) of each fetch, so max_id is above every ID Leaf
// issued, as idalloc's max_id is at or above every ID it issued: a tag
// carried over with max_id as it is continues above Leaf's IDs.
const leafTagsQuery = `SELECT biz_tag AS app_tag, max_id, step,
	COALESCE(description, '') AS description, update_time FROM leaf_alloc ORDER BY biz_tag`

// OpenLeaf opens the database of a Meituan Leaf deployment (MySQL, dsn as
// OpenMySQL takes it) for reading only, as the source of idalloc migrate:
// Tags lists its leaf_alloc rows, with biz_tag as the tag's name (names
// that idalloc refuses are listed as they are, for the caller to report);
// LeaseTimestamps and Layouts list nothing (Leaf's snowflake mode keeps its
// worker IDs in ZooKeeper). Errors: as OpenMySQL's, or no leaf_alloc table.
func OpenLeaf(ctx context.Context, dsn string) (*ReadOnly, error) {
	r, addr, err := openMySQLReadOnly(ctx, dsn, leafTagsQuery)
	if err == nil {
		// A Leaf database has no idalloc tables; should it have them,
		// they are not Leaf's and are not read.
		r.tables = map[string]bool{"leaf_alloc": r.tables["leaf_alloc"]}
		if err = r.require("leaf_alloc", ""); err != nil {
			_ = r.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open leaf database %s: %w", addr, err)
	}
	return r, nil
}
