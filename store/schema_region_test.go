package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestDatabaseBeforeRegions: a database from before regions (no
// idalloc_region) starts as it is, and a single-region instance on it is
// as before; an instance of several regions is refused with
// ErrMissingTables naming the table and -init-schema, which creates it,
// reporting it, after which the region is recorded. SQLite creates it at
// its next open.
func TestDatabaseBeforeRegions(t *testing.T) {
	two := segment.Region{Count: 2, ID: 1}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := t.Context()
			db := d.NewDB(t)
			db.Exec(t, "DROP TABLE idalloc_region")
			st, _, err := openStore(t, db, false)
			if err != nil {
				t.Fatalf("a start without -init-schema: %v", err)
			}
			if err := segment.CheckRegion(ctx, st, segment.Region{}); err != nil {
				t.Errorf("a single region without the table: %v", err)
			}
			if d.Name == "sqlite" {
				if err := segment.CheckRegion(ctx, st, two); err != nil {
					t.Errorf("%v after SQLite's open: %v", two, err)
				}
				return
			}
			err = segment.CheckRegion(ctx, st, two)
			if !errors.Is(err, store.ErrMissingTables) || !strings.Contains(err.Error(), "idalloc_region") ||
				!strings.Contains(err.Error(), "-init-schema") {
				t.Errorf("%v without the table = %v; want %v naming idalloc_region and -init-schema", two, err, store.ErrMissingTables)
			}
			st, reports, err := openStore(t, db, true)
			if err != nil {
				t.Fatalf("-init-schema: %v", err)
			}
			if want := []string{"created table idalloc_region"}; !slices.Equal(reports, want) {
				t.Errorf("-init-schema reported %q, want %q", reports, want)
			}
			if err := segment.CheckRegion(ctx, st, two); err != nil {
				t.Errorf("%v after -init-schema: %v", two, err)
			}
		})
	}
}

// TestIssuedBeforeColumns: on a database from before the start column
// and segment_periods, whose rows' first IDs nothing records, a row
// counts as issued from max_id 0 on: the seeded test_business at 0 has
// issued nothing and the database may become a region; a row at 70 has,
// and a start of several regions is refused naming it, nothing recorded.
func TestIssuedBeforeColumns(t *testing.T) {
	two := segment.Region{Count: 2, ID: 1}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			for _, c := range []struct {
				maxID int64
				want  string
			}{{0, ""}, {70, "test_business"}} {
				db := d.NewDB(t)
				old := "ALTER TABLE segments DROP COLUMN start"
				if d.Name == "sqlite" { // which adds the column at every open
					old = "UPDATE segments SET start = NULL"
				}
				db.Exec(t, "DROP TABLE segment_periods", old, fmt.Sprintf("UPDATE segments SET max_id = %d", c.maxID))
				st, _, err := openStore(t, db, false)
				if err != nil {
					t.Fatal(err)
				}
				tag, issued, err := st.IssuedTag(t.Context())
				if err != nil || tag != c.want || issued != (c.want != "") {
					t.Errorf("max_id %d: IssuedTag = %q, %v, %v; want %q", c.maxID, tag, issued, err, c.want)
				}
				switch err = segment.CheckRegion(t.Context(), st, two); {
				case c.want == "" && err != nil:
					t.Errorf("max_id %d: CheckRegion(%v) = %v, want nil", c.maxID, two, err)
				case c.want != "" && !errors.Is(err, segment.ErrIssuedAsSingle):
					t.Errorf("max_id %d: CheckRegion(%v) = %v, want %v", c.maxID, two, err, segment.ErrIssuedAsSingle)
				}
			}
		})
	}
}
