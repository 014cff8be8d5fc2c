package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// regionCases prove segment.RegionStore: a database records the region it
// serves once, the first writer's, for every handle and for migrate's
// read-only one; a database of a single region (or one made before the
// record) records none.
func regionCases() []testCase {
	return []testCase{
		{"region/a new database records none", testRegionNone},
		{"region/the first record wins and never changes", testRegionFirstWins},
		{"region/handles recording at once agree on one", testRegionConcurrent},
		{"region/without the table none is recorded, and recording names the fix", testRegionNoTable},
		{"region/an instance of another region is refused", testRegionRefused},
	}
}

// regionIssuedCases prove segment.RegionStore's IssuedTag and what
// CheckRegion makes of it: a database whose tags issued IDs (a max_id
// above start − 1, a dated counter above it) becomes no region in place,
// nothing recorded; one whose tags issued nothing does. Each names the
// tag IssuedTag must find, "" for none.
func regionIssuedCases() []testCase {
	fetch := func(tag string) func(*testing.T, store.Store) error {
		return func(t *testing.T, st store.Store) error {
			_, err := st.Fetch(t.Context(), tag, segment.MaxUsableID, 0)
			return err
		}
	}
	seq := segment.Tag{AppTag: "seq", Step: 10, Start: 1000}
	fixed := segment.Tag{AppTag: "fixed", Step: 10, Format: segment.FormatFixedLength, Length: 4}
	daily := segment.Tag{AppTag: "daily", Step: 10, Format: segment.FormatDated, Length: 6, Start: 100,
		FormatSpec: "v1;period=day;time_zone=UTC;prefix=;separator="}
	create := func(tags ...segment.Tag) func(*testing.T, store.Store) error {
		return func(t *testing.T, st store.Store) error {
			for _, tg := range tags {
				if err := st.CreateTag(t.Context(), tg); err != nil {
					return err
				}
			}
			return nil
		}
	}
	then := func(steps ...func(*testing.T, store.Store) error) func(*testing.T, store.Store) error {
		return func(t *testing.T, st store.Store) error {
			for _, step := range steps {
				if err := step(t, st); err != nil {
					return err
				}
			}
			return nil
		}
	}
	cases := []struct {
		name   string
		before func(*testing.T, store.Store) error
		issued string
	}{
		{"a new database, test_business unused", create(), ""},
		{"tags created, none used", create(seq, fixed, daily), ""},
		{"every ID fetched given back", func(t *testing.T, st store.Store) error {
			f, err := st.Fetch(t.Context(), "test_business", segment.MaxUsableID, 0)
			if err == nil {
				_, err = st.GiveBack(t.Context(), "test_business", f.MaxID, 0)
			}
			return err
		}, ""},
		{"test_business used", fetch("test_business"), "test_business"},
		{"a tag with a start used", then(create(seq), fetch("seq")), "seq"},
		{"a fixed_length tag used", then(create(fixed), fetch("fixed")), "fixed"},
		{"a dated tag's counter moved", then(create(daily), func(t *testing.T, st store.Store) error {
			_, err := st.FetchPeriod(t.Context(), "daily", day1, daily.Start, noLimit, 0)
			return err
		}), "daily"},
	}
	var out []testCase
	for _, c := range cases {
		out = append(out, testCase{"region/issued: " + c.name, func(t *testing.T, db DB) {
			testRegionIssued(t, db, c.before, c.issued)
		}})
	}
	return out
}

// testRegionIssued prepares db with before, then holds IssuedTag to want
// and CheckRegion to it: a single region always served; region 1 of 2
// recorded when want is "", else refused naming want and idalloc migrate,
// nothing recorded.
func testRegionIssued(t *testing.T, db DB, before func(*testing.T, store.Store) error, want string) {
	st := db.Open(t)
	if err := before(t, st); err != nil {
		t.Fatal(err)
	}
	tag, issued, err := st.IssuedTag(t.Context())
	if err != nil || tag != want || issued != (want != "") {
		t.Fatalf("IssuedTag = %q, %v, %v; want %q", tag, issued, err, want)
	}
	if err := segment.CheckRegion(t.Context(), st, segment.Region{}); err != nil {
		t.Errorf("CheckRegion of a single region = %v, want nil", err)
	}
	r := segment.Region{Count: 2, ID: 1}
	err = segment.CheckRegion(t.Context(), st, r)
	if want == "" {
		if err != nil {
			t.Fatalf("CheckRegion(%v) = %v, want it recorded", r, err)
		}
		wantRecord(t, st, &r)
		return
	}
	if !errors.Is(err, segment.ErrIssuedAsSingle) || !strings.Contains(err.Error(), fmt.Sprintf("tag %q", want)) ||
		!strings.Contains(err.Error(), "idalloc migrate") {
		t.Errorf("CheckRegion(%v) = %v, want %v naming tag %q and idalloc migrate", r, err, segment.ErrIssuedAsSingle, want)
	}
	wantRecord(t, st, nil)
}

// regionReader is a store or migrate's read-only handle.
type regionReader interface {
	RegionRecord(ctx context.Context) (segment.Region, bool, error)
}

// wantRecord fails t unless st records want (nil: none).
func wantRecord(t *testing.T, st regionReader, want *segment.Region) {
	t.Helper()
	got, ok, err := st.RegionRecord(t.Context())
	switch {
	case err != nil:
		t.Fatalf("RegionRecord: %v", err)
	case want == nil && ok:
		t.Errorf("RegionRecord = %v, want none", got)
	case want != nil && (!ok || got != *want):
		t.Errorf("RegionRecord = %v, %v; want %v", got, ok, *want)
	}
}

func testRegionNone(t *testing.T, db DB) {
	wantRecord(t, db.Open(t), nil)
	wantRecord(t, db.OpenReadOnly(t), nil)
}

func testRegionFirstWins(t *testing.T, db DB) {
	st := db.Open(t)
	first := segment.Region{Count: 2, ID: 1}
	for _, r := range []segment.Region{first, {Count: 3}, {}} {
		got, err := st.RecordRegion(t.Context(), r)
		if err != nil || got != first {
			t.Errorf("RecordRegion(%v) = %v, %v; want %v, the first", r, got, err, first)
		}
	}
	wantRecord(t, st, &first)
	wantRecord(t, db.Open(t), &first)
	wantRecord(t, db.OpenReadOnly(t), &first)
}

func testRegionConcurrent(t *testing.T, db DB) {
	const n = 6
	got := make([]segment.Region, n)
	errs := make([]error, n)
	handles := make([]store.Store, n)
	for i := range handles {
		handles[i] = db.Open(t)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = handles[i].RecordRegion(t.Context(), segment.Region{Count: n, ID: int64(i)})
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("RecordRegion from handle %d: %v", i, errs[i])
		}
		if got[i] != got[0] || got[i].Count != n {
			t.Errorf("handle %d was answered %v, handle 0 %v: want one record of the %d asked for", i, got[i], got[0], n)
		}
	}
	wantRecord(t, handles[0], &got[0])
}

func testRegionNoTable(t *testing.T, db DB) {
	st := db.Open(t)
	db.Exec(t, "DROP TABLE idalloc_region")
	wantRecord(t, st, nil)
	_, err := st.RecordRegion(t.Context(), segment.Region{Count: 2})
	if !errors.Is(err, store.ErrMissingTables) || !strings.Contains(err.Error(), "idalloc_region") {
		t.Errorf("RecordRegion without the table = %v, want %v naming idalloc_region", err, store.ErrMissingTables)
	}
	// A single-region instance starts on such a database as before.
	if err := segment.CheckRegion(t.Context(), st, segment.Region{}); err != nil {
		t.Errorf("CheckRegion of a single region without the table = %v, want nil", err)
	}
}

func testRegionRefused(t *testing.T, db DB) {
	st := db.Open(t)
	r := segment.Region{Count: 2, ID: 1}
	if err := segment.CheckRegion(t.Context(), st, r); err != nil {
		t.Fatalf("first CheckRegion(%v) = %v", r, err)
	}
	for _, other := range []segment.Region{{Count: 2, ID: 0}, {Count: 3, ID: 1}, {}} {
		err := segment.CheckRegion(t.Context(), db.Open(t), other)
		if !errors.Is(err, segment.ErrRegionMismatch) || !strings.Contains(err.Error(), "this database is region 1 of 2") {
			t.Errorf("CheckRegion(%v) on region 1 of 2 = %v, want %v naming both", other, err, segment.ErrRegionMismatch)
		}
	}
	wantRecord(t, st, &r)
}
