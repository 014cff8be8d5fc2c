package store_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/internal/tinyidtest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// TestOpenTinyid: on every engine, a Tinyid database is read as it is
// (each row with its delta and remainder, as tags, and its tokens) and
// never written; it lists no idalloc history.
func TestOpenTinyid(t *testing.T) {
	for _, engine := range tinyidtest.Engines {
		t.Run(engine, func(t *testing.T) {
			ctx := t.Context()
			db := tinyidtest.New(t, engine,
				`INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES
					('test_odd', 1, 1, 100000, 2, 1), ('order', 5, 5001, 1000, 1, 0), ('no_step', 0, 3, NULL, 1, 0)`,
				`INSERT INTO tiny_id_token (token, biz_type, remark) VALUES ('abc', 'order', 'r1'), ('abc', 'test_odd', '')`)
			r, err := store.OpenTinyid(ctx, engine, db.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()

			rows, err := r.Segments(ctx)
			want := []store.TinyidSegment{
				{BizType: "no_step", BeginID: 0, MaxID: 3, Step: 0, Delta: 1, Remainder: 0},
				{BizType: "order", BeginID: 5, MaxID: 5001, Step: 1000, Delta: 1, Remainder: 0},
				{BizType: "test_odd", BeginID: 1, MaxID: 1, Step: 100000, Delta: 2, Remainder: 1},
			}
			if err != nil || !reflect.DeepEqual(rows, want) {
				t.Errorf("Segments = %+v, %v; want %+v", rows, err, want)
			}
			tags, err := r.Tags(ctx)
			if err != nil || len(tags) != 3 || !reflect.DeepEqual(tags[1], segment.Tag{AppTag: "order", MaxID: 5001, Step: 1000, Format: segment.FormatSequential}) {
				t.Errorf("Tags = %+v, %v; want every row, order with max_id 5001 and step 1000", tags, err)
			}
			tokens, err := r.Tokens(ctx)
			wantTokens := []store.TinyidToken{{ID: 1, Token: "abc", BizType: "order", Remark: "r1"}, {ID: 2, Token: "abc", BizType: "test_odd"}}
			if err != nil || !reflect.DeepEqual(tokens, wantTokens) {
				t.Errorf("Tokens = %+v, %v; want %+v", tokens, err, wantTokens)
			}
			if lts, err := r.LeaseTimestamps(ctx); err != nil || len(lts) != 0 {
				t.Errorf("LeaseTimestamps = %v, %v; want none", lts, err)
			}
			if ps, err := r.Periods(ctx); err != nil || len(ps) != 0 {
				t.Errorf("Periods = %v, %v; want none", ps, err)
			}

			if err := store.ExecReadOnly(ctx, r.ReadOnly, `UPDATE tiny_id_info SET max_id = 0`); err == nil {
				t.Errorf("UPDATE through the Tinyid handle succeeded, want it refused")
			}
			if rows, _ := r.Segments(ctx); len(rows) != 3 || rows[1].MaxID != 5001 {
				t.Errorf("after the refused UPDATE: %+v, want order's max_id 5001", rows)
			}
		})
	}
}

func TestOpenTinyidRefuses(t *testing.T) {
	ctx := t.Context()
	db := tinyidtest.New(t, "sqlite", `DROP TABLE tiny_id_info`)
	if _, err := store.OpenTinyid(ctx, "sqlite", db.DSN); err == nil || !strings.Contains(err.Error(), "no tiny_id_info table") {
		t.Errorf("OpenTinyid without tiny_id_info: %v, want an error naming it", err)
	}
	if _, err := store.OpenTinyid(ctx, "oracle", db.DSN); err == nil || !strings.Contains(err.Error(), `unknown engine "oracle"`) {
		t.Errorf("OpenTinyid on another engine: %v, want it named as unknown", err)
	}
}
