package store

import (
	"context"
	"fmt"

	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/segment"
)

// Tinyid is the database of a Didi Tinyid deployment, opened for reading
// only as the source of idalloc migrate. Its tables, as Tinyid's db.sql
// makes them:
//
//	tiny_id_info(id, biz_type, begin_id, max_id, step, delta, remainder,
//	             create_time, update_time, version)
//	tiny_id_token(id, token, biz_type, remark, create_time, update_time)
//
// Tinyid's server moves max_id forward by step before it hands out a
// segment, whose IDs are then (max_id - step, max_id] (taking only those ≡
// remainder mod delta): so max_id is at or above every ID Tinyid issued,
// and a tag carried over with it as its max_id continues at max_id + 1,
// the ID Tinyid would have issued next (delta 1, remainder 0). begin_id
// only records where the row began and is read by nothing in Tinyid.
//
// Tags lists tiny_id_info as idalloc tags (biz_type as the name, no
// description: Tinyid keeps none); LeaseTimestamps, Layouts, Periods and
// LiveLeases list nothing. Segments and Tokens list Tinyid's own rows.
type Tinyid struct{ *ReadOnly }

// tinyidSegmentsQuery reads tiny_id_info. Its step may be NULL (the
// column allows it), read as 0, which no tag may have.
const tinyidSegmentsQuery = `SELECT biz_type, begin_id, max_id, COALESCE(step, 0) AS step, delta, remainder
	FROM tiny_id_info ORDER BY biz_type`

// OpenTinyid opens a Tinyid database read-only on engine ("mysql", as
// Tinyid ships; "postgres" or "sqlite" for a copy of its tables there),
// dsn as OpenMySQLReadOnly, OpenPostgresReadOnly or OpenSQLiteReadOnly
// take it. Errors: theirs, an unknown engine, or no tiny_id_info table.
func OpenTinyid(ctx context.Context, engine, dsn string) (*Tinyid, error) {
	d, ok := DriverNamed(engine)
	if !ok {
		return nil, fmt.Errorf("open tinyid database: unknown engine %q (want %s)", engine, drivers.Or(DriverNames()))
	}
	// where names the database in errors, without a password.
	r, where, err := d.openTinyid(ctx, dsn)
	if err == nil {
		err = r.require("tiny_id_info", "")
	}
	if err != nil {
		if r != nil {
			_ = r.Close()
		}
		if where != "" {
			return nil, fmt.Errorf("open tinyid database on %s: %w", where, err)
		}
		return nil, fmt.Errorf("open tinyid database: %w", err)
	}
	// A Tinyid database has no idalloc tables; should it have them, they
	// are not Tinyid's and are not read.
	r.tables = map[string]bool{"tiny_id_info": true, "tiny_id_token": r.tables["tiny_id_token"]}
	return &Tinyid{r}, nil
}

// TinyidSegment is one row of tiny_id_info: a biz_type's counter.
type TinyidSegment struct {
	BizType string `db:"biz_type"`
	BeginID int64  `db:"begin_id"`
	MaxID   int64  `db:"max_id"`
	Step    int64  `db:"step"`
	// Delta and Remainder make Tinyid's IDs of the biz_type those ≡
	// Remainder (mod Delta): how it splits one sequence between
	// databases. idalloc serves every number of a tag's sequence.
	Delta     int64 `db:"delta"`
	Remainder int64 `db:"remainder"`
}

// Segments lists tiny_id_info by biz_type.
func (t *Tinyid) Segments(ctx context.Context) ([]TinyidSegment, error) {
	var rows []TinyidSegment
	if err := t.d.x.SelectContext(ctx, &rows, t.d.q(tinyidSegmentsQuery)); err != nil {
		return nil, fmt.Errorf("read tiny_id_info: %w", err)
	}
	return rows, nil
}

// Tags lists tiny_id_info as tags: biz_type as the name, with its max_id
// and step, sequential, start unknown. Names idalloc refuses are listed as
// they are, for the caller to report.
func (t *Tinyid) Tags(ctx context.Context) ([]segment.Tag, error) {
	rows, err := t.Segments(ctx)
	if err != nil {
		return nil, err
	}
	tags := make([]segment.Tag, len(rows))
	for i, r := range rows {
		tags[i] = segment.Tag{AppTag: r.BizType, MaxID: r.MaxID, Step: r.Step, Format: segment.FormatSequential}
	}
	return tags, nil
}

// TinyidToken is one row of tiny_id_token: token may ask for IDs of
// biz_type. A token allowed several biz_types has a row for each.
type TinyidToken struct {
	ID      int64  `db:"id"`
	Token   string `db:"token"`
	BizType string `db:"biz_type"`
	Remark  string `db:"remark"`
}

// Tokens lists tiny_id_token by id; none where the database has no such
// table.
func (t *Tinyid) Tokens(ctx context.Context) ([]TinyidToken, error) {
	if !t.tables["tiny_id_token"] {
		return nil, nil
	}
	var rows []TinyidToken
	err := t.d.x.SelectContext(ctx, &rows, t.d.q(`SELECT id, token, biz_type, remark FROM tiny_id_token ORDER BY id`))
	if err != nil {
		return nil, fmt.Errorf("read tiny_id_token: %w", err)
	}
	return rows, nil
}
