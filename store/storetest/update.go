package storetest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
)

func updateCases() []testCase {
	return []testCase{
		{"update/step and description change, nothing else of the row does", testUpdateOnlyThose},
		{"update/a fetch after it takes the new step", testUpdateStepFetch},
		{"update/the values the row has already are no miss", testUpdateSameValues},
		{"update/unknown tags and rows no allocator can serve are refused and change nothing", testUpdateRefused},
	}
}

func testUpdateOnlyThose(t *testing.T, db DB) {
	st := db.Open(t)
	key := testKey(32)
	created := []segment.Tag{
		{AppTag: "seq", Step: 10, Start: 5, Description: "before"},
		{AppTag: "scr", Step: 10, Format: segment.FormatScrambled, Length: 8, FormatKey: key},
		{AppTag: "ord", Step: 10, Start: 1, Format: segment.FormatDated, Length: 6, FormatSpec: testSpec},
	}
	for _, tg := range created {
		mustCreate(t, st, tg)
		mustFetch(t, st, tg.AppTag, 0)
	}
	before := tagsByName(t, st)
	for _, tg := range created {
		step, desc := int64(700), "changed: "+tg.AppTag
		got, err := st.UpdateTag(t.Context(), tg.AppTag, segment.TagChange{Step: &step, Description: &desc})
		if err != nil {
			t.Fatalf("UpdateTag(%s): %v", tg.AppTag, err)
		}
		listed := tagsByName(t, st)[tg.AppTag]
		if !reflect.DeepEqual(got, listed) {
			t.Errorf("UpdateTag(%s) answered %+v, want the row as Tags lists it, %+v", tg.AppTag, got, listed)
		}
		want := before[tg.AppTag]
		if listed.UpdateTime.Before(want.UpdateTime) {
			t.Errorf("%s: update_time went back from %v to %v", tg.AppTag, want.UpdateTime, listed.UpdateTime)
		}
		want.Step, want.Description, want.UpdateTime = step, desc, listed.UpdateTime
		if !reflect.DeepEqual(listed, want) {
			t.Errorf("%s after the update:\n  %+v\nwant only step and description changed:\n  %+v", tg.AppTag, listed, want)
		}
	}
	// One field alone leaves the other as it is.
	step := int64(3)
	if _, err := st.UpdateTag(t.Context(), "seq", segment.TagChange{Step: &step}); err != nil {
		t.Fatal(err)
	}
	desc := ""
	if _, err := st.UpdateTag(t.Context(), "scr", segment.TagChange{Description: &desc}); err != nil {
		t.Fatal(err)
	}
	after := tagsByName(t, st)
	if g := after["seq"]; g.Step != 3 || g.Description != "changed: seq" {
		t.Errorf("seq after a step change: %+v, want step 3 and its description kept", g)
	}
	if g := after["scr"]; g.Step != 700 || g.Description != "" {
		t.Errorf("scr after a description change: %+v, want step 700 kept and no description", g)
	}
}

func testUpdateStepFetch(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 10})
	mustFetch(t, st, "orders", 0) // (0, 10]
	step := int64(250)
	if _, err := st.UpdateTag(t.Context(), "orders", segment.TagChange{Step: &step}); err != nil {
		t.Fatal(err)
	}
	if m := maxID(t, st, "orders"); m != 10 {
		t.Errorf("max_id after the update %d, want 10: a step change moves no max_id", m)
	}
	// From another handle, as another instance fetches.
	if got, want := mustFetch(t, db.Open(t), "orders", 0), (segment.Fetched{MaxID: 260, Size: 250, Step: 250}); got != want {
		t.Errorf("Fetch after the update = %+v, want %+v", got, want)
	}
}

// testUpdateSameValues: MySQL reports the rows an UPDATE changed unless
// told to count those it matched; a value set again must not read as an
// unknown tag.
func testUpdateSameValues(t *testing.T, db DB) {
	st := db.Open(t)
	step, desc := int64(100000), seeded
	for range 2 { // twice within the same millisecond, most likely: update_time unchanged too
		if _, err := st.UpdateTag(t.Context(), seeded, segment.TagChange{Step: &step, Description: &desc}); err != nil {
			t.Fatalf("UpdateTag(%s) to the values it has: %v", seeded, err)
		}
	}
}

func testUpdateRefused(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 10, Description: "kept"})
	before := tagsByName(t, st)
	zero, ten := int64(0), int64(10)
	long := strings.Repeat("d", segment.MaxDescription+1)
	for _, tc := range []struct {
		name string
		tag  string
		c    segment.TagChange
		want error
	}{
		{"unknown tag", "nope", segment.TagChange{Step: &ten}, segment.ErrUnknownTag},
		{"nothing to change", "orders", segment.TagChange{}, segment.ErrNoChange},
		{"step 0", "orders", segment.TagChange{Step: &zero}, segment.ErrInvalidStep},
		{"a description longer than the column", "orders", segment.TagChange{Step: &ten, Description: &long}, segment.ErrInvalidDescription},
	} {
		if _, err := st.UpdateTag(t.Context(), tc.tag, tc.c); !errors.Is(err, tc.want) {
			t.Errorf("%s: UpdateTag error = %v, want %v", tc.name, err, tc.want)
		}
	}
	after := tagsByName(t, st)
	if !reflect.DeepEqual(after, before) {
		t.Errorf("after the refusals the rows are\n  %+v\nwant them as before\n  %+v", after, before)
	}
	if _, ok := after["nope"]; ok {
		t.Errorf("an update of an unknown tag made a row")
	}
}
