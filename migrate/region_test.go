package migrate

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/internal/tinyidtest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// recorded returns the region db records, the zero Region for none.
func recorded(t *testing.T, db storetest.DB) segment.Region {
	t.Helper()
	r, _, err := db.Open(t).RegionRecord(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hasTag reports whether db holds tag.
func hasTag(t *testing.T, db storetest.DB, tag string) bool {
	t.Helper()
	return slices.ContainsFunc(tagsOf(t, db.Open(t)), func(tg segment.Tag) bool { return tg.AppTag == tag })
}

// TestMigrateCarriesTheRegion: the source's region record goes to a target
// without one, and to one that records the same; a target of another
// region is refused naming both, nothing copied.
func TestMigrateCarriesTheRegion(t *testing.T) {
	ctx := context.Background()
	src := storetest.SQLite().NewDB(t)
	st := src.Open(t)
	r := segment.Region{Count: 2, ID: 1}
	if err := segment.CheckRegion(ctx, st, r); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "order", Step: 10, Start: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil { // a source held open is in use
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		target  *segment.Region // recorded on the target before; nil for none
		refused bool
	}{
		{"a target without a record", nil, false},
		{"a target of the same region", &r, false},
		{"a target of another region", &segment.Region{Count: 2, ID: 0}, true},
		{"a target of another count", &segment.Region{Count: 3, ID: 1}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := storetest.SQLite().NewDB(t)
			if c.target != nil {
				if err := segment.CheckRegion(ctx, dst.Open(t), *c.target); err != nil {
					t.Fatal(err)
				}
			}
			var out strings.Builder
			err := runMigrate([]string{"-from-driver", "sqlite", "-from-dsn", src.DSN, "-to-driver", "sqlite", "-to-dsn", dst.DSN},
				&out, io.Discard)
			if !c.refused {
				if err != nil {
					t.Fatalf("migrate: %v\n%s", err, out.String())
				}
				if got := recorded(t, dst); got != r || !hasTag(t, dst, "order") {
					t.Errorf("target records %v, order there %v; want %v and order", got, hasTag(t, dst, "order"), r)
				}
				return
			}
			if !errors.Is(err, segment.ErrRegionMismatch) || !strings.Contains(err.Error(), "the target database is "+c.target.String()) ||
				!strings.Contains(err.Error(), "the source's IDs are region 1 of 2's") {
				t.Errorf("migrate = %v, want %v naming both regions", err, segment.ErrRegionMismatch)
			}
			if hasTag(t, dst, "order") {
				t.Errorf("a refused migrate copied order")
			}
		})
	}
}

// TestMigrateFromOneDatabaseToRegions: a database that issued IDs as a
// single region is copied into each region's database with -region-count
// and -region-id, each target then recording its region and starting
// above everything the source issued, so that a start of that region on
// it is served; the flags are refused for a source that records another
// region, and for a target whose own tags issued IDs, nothing copied.
func TestMigrateFromOneDatabaseToRegions(t *testing.T) {
	ctx := t.Context()
	src := storetest.SQLite().NewDB(t)
	st := src.Open(t)
	if _, err := st.Fetch(ctx, "test_business", segment.MaxUsableID, 50); err != nil { // IDs 1-50 issued
		t.Fatal(err)
	}
	if err := st.Close(); err != nil { // a source held open is in use
		t.Fatal(err)
	}
	migrateTo := func(from, to storetest.DB, id string) (string, error) {
		var out strings.Builder
		err := runMigrate([]string{"-from-driver", "sqlite", "-from-dsn", from.DSN, "-to-driver", "sqlite", "-to-dsn", to.DSN,
			"-region-count", "2", "-region-id", id}, &out, io.Discard)
		return out.String(), err
	}
	for id := range int64(2) {
		region := segment.Region{Count: 2, ID: id}
		dst := storetest.SQLite().NewDB(t)
		if out, err := migrateTo(src, dst, strconv.FormatInt(id, 10)); err != nil ||
			!strings.Contains(out, "region: the target serves "+region.String()+", as -region-count and -region-id say") {
			t.Fatalf("migrate into %v: %v\n%s", region, err, out)
		}
		if r := recorded(t, dst); r != region {
			t.Errorf("target records %v, want %v", r, region)
		}
		to := dst.Open(t)
		if err := segment.CheckRegion(ctx, to, region); err != nil {
			t.Errorf("a start of %v on its copy: %v", region, err)
		}
		a, err := segment.New(ctx, to, segment.Config{Region: region})
		if err != nil {
			t.Fatal(err)
		}
		id1, err := a.Next(ctx, "test_business")
		_ = a.Close(ctx)
		if err != nil || id1 <= 50 || id1%2 != id {
			t.Errorf("%v's first ID = %d, %v; want one above 50, ≡ %d (mod 2)", region, id1, err, id)
		}
	}

	recordedSrc := storetest.SQLite().NewDB(t)
	rs := recordedSrc.Open(t)
	if err := segment.CheckRegion(ctx, rs, segment.Region{Count: 2, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	usedDst := storetest.SQLite().NewDB(t)
	used := usedDst.Open(t)
	if err := used.CreateTag(ctx, segment.Tag{AppTag: "own", Step: 10, Start: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := used.Fetch(ctx, "own", segment.MaxUsableID, 0); err != nil {
		t.Fatal(err)
	}
	if err := used.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		from, to storetest.DB
		sentinel error
		want     string
	}{
		{"a source of another region", recordedSrc, storetest.SQLite().NewDB(t), segment.ErrRegionMismatch,
			"the source database is region 1 of 2, and -region-count 2 -region-id 0 say region 0 of 2"},
		{"a target that issued IDs", src, usedDst, segment.ErrIssuedAsSingle, `target: this database issued IDs as a single region (tag "own" among them)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := migrateTo(c.from, c.to, "0")
			if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("migrate = %v, want %v saying %q", err, c.sentinel, c.want)
			}
			if r := recorded(t, c.to); r != (segment.Region{}) {
				t.Errorf("target records %v after the refusal, want none", r)
			}
		})
	}
}

// TestMigrateFromTinyidIntoARegion: Tinyid rows whose delta and remainder
// are the target's region (-region-count, -region-id) are honoured, the
// target records that region, and an allocator of it continues above
// Tinyid's max_id with the same residue; a row of another split is
// refused, nothing migrated; the flags are checked first.
func TestMigrateFromTinyidIntoARegion(t *testing.T) {
	ctx := context.Background()
	src := tinyidtest.New(t, "sqlite", `INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES
		('odd', 1, 1001, 100, 2, 1), ('odd2', 1, 7, 10, 2, 1)`)
	mixed := tinyidtest.New(t, "sqlite", `INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES
		('odd', 1, 1001, 100, 2, 1), ('all', 1, 50, 10, 1, 0)`)
	run := func(from storetest.DB, to storetest.DB, extra ...string) (string, error) {
		var out strings.Builder
		args := append([]string{"-from-driver", "tinyid", "-from-engine", "sqlite", "-from-dsn", from.DSN,
			"-to-driver", "sqlite", "-to-dsn", to.DSN}, extra...)
		err := runMigrate(args, &out, io.Discard)
		return out.String(), err
	}

	for _, bad := range [][]string{{"-region-id", "1"}, {"-region-count", "0"}, {"-region-count", "2", "-region-id", "2"}} {
		if _, err := run(src, storetest.SQLite().NewDB(t), bad...); err == nil || !strings.Contains(err.Error(), "-region-") {
			t.Errorf("migrate %v = %v, want the flags refused", bad, err)
		}
	}
	refusedTo := storetest.SQLite().NewDB(t)
	got, err := run(mixed, refusedTo, "-region-count", "2", "-region-id", "1")
	if !errors.As(err, new(tinyidRefusedError)) || !strings.Contains(got, `"all": CANNOT BE HONOURED: delta 1 and remainder 0, `+
		`and the target serves region 1 of 2 (-region-count 2 -region-id 1)`) {
		t.Errorf("a row of another split: %v\n%s", err, got)
	}
	if hasTag(t, refusedTo, "odd") {
		t.Errorf("a refused migrate copied odd")
	}

	to := storetest.SQLite().NewDB(t)
	if got, err := run(src, to, "-region-count", "2", "-region-id", "1"); err != nil || !strings.Contains(got, "region: the target serves region 1 of 2") {
		t.Fatalf("migrate into region 1 of 2: %v\n%s", err, got)
	}
	region := segment.Region{Count: 2, ID: 1}
	if r := recorded(t, to); r != region {
		t.Errorf("target records %v, want %v", r, region)
	}
	a, err := segment.New(ctx, to.Open(t), segment.Config{Region: region})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	for tag, want := range map[string]int64{"odd": 1003, "odd2": 9} {
		if id, err := a.Next(ctx, tag); err != nil || id != want {
			t.Errorf("%s after the move: %d, %v; want %d, the next odd number above Tinyid's max_id", tag, id, err, want)
		}
	}
}
