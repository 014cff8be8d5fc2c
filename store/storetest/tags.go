package storetest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// tagCases prove what a tag list reloaded by change relies on
// (TagsSince) and bulk creation (CreateTags).
func tagCases() []testCase {
	return []testCase{
		{"tags since/every row, in app_tag order, in pages", testTagsSincePages},
		{"tags since/the rows every write touched, none other", testTagsSinceWrites},
		{"create tags/in chunks, skipping tags that exist", testCreateTags},
		{"create tags/a bad or repeated row writes nothing", testCreateTagsRefused},
		{"create tags/handles racing create each tag once", testCreateTagsRace},
	}
}

// tagsSince calls TagsSince or fails t.
func tagsSince(t *testing.T, st store.Store, since time.Time, after string, limit int) ([]segment.Tag, time.Time) {
	t.Helper()
	rows, asOf, err := st.TagsSince(t.Context(), since, after, limit)
	if err != nil {
		t.Fatalf("TagsSince(%v, %q, %d): %v", since, after, limit, err)
	}
	return rows, asOf
}

func names(rows []segment.Tag) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.AppTag
	}
	return out
}

func testTagsSincePages(t *testing.T, db DB) {
	st := db.Open(t)
	for _, tag := range []string{"b", "A", "c.1", "a", "c:0"} {
		mustCreate(t, st, segment.Tag{AppTag: tag, Step: 5})
	}
	all, err := st.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	rows, asOf := tagsSince(t, st, time.Time{}, "", 0)
	if !slices.EqualFunc(rows, all, func(x, y segment.Tag) bool { return x.AppTag == y.AppTag && x.MaxID == y.MaxID }) {
		t.Errorf("TagsSince(zero) = %v, want Tags' %v", names(rows), names(all))
	}
	if asOf.Location() != time.UTC || time.Since(asOf) > time.Hour || time.Until(asOf) > time.Hour {
		t.Errorf("asOf = %v, want the store's clock now, in UTC", asOf)
	}
	// Bytewise order, pages from the last name of the one before.
	want := []string{"A", "a", "b", "c.1", "c:0", seeded}
	var got []string
	for after := ""; ; {
		page, _ := tagsSince(t, st, time.Time{}, after, 2)
		if len(page) > 2 {
			t.Fatalf("TagsSince(limit 2) = %v", names(page))
		}
		got = append(got, names(page)...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].AppTag
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages of 2: %v, want %v", got, want)
	}
}

// testTagsSinceWrites: after a reading of the store's clock, TagsSince from
// it lists exactly the rows written since: fetched, given back, updated,
// created one at a time or in bulk; not a row left alone, nor one whose
// give-back was refused (which writes nothing).
func testTagsSinceWrites(t *testing.T, db DB) {
	st := db.Open(t)
	ctx := t.Context()
	for _, tag := range []string{"fetched", "given", "refused", "updated", "still"} {
		mustCreate(t, st, segment.Tag{AppTag: tag, Step: 10})
	}
	given := mustFetch(t, st, "given", 0)
	refused := mustFetch(t, st, "refused", 0)
	// The store's clock counts milliseconds: the writes above are then
	// before the reading, the ones below after it.
	time.Sleep(20 * time.Millisecond)
	_, asOf := tagsSince(t, st, time.Time{}, "", 1)
	time.Sleep(20 * time.Millisecond)

	mustFetch(t, st, "fetched", 0)
	if ok, err := st.GiveBack(ctx, "given", given.MaxID, 5); err != nil || !ok {
		t.Fatalf("GiveBack = %v, %v", ok, err)
	}
	if ok, err := st.GiveBack(ctx, "refused", refused.MaxID-1, 5); err != nil || ok {
		t.Fatalf("GiveBack(stale) = %v, %v", ok, err)
	}
	step := int64(20)
	if _, err := st.UpdateTag(ctx, "updated", segment.TagChange{Step: &step}); err != nil {
		t.Fatalf("UpdateTag: %v", err)
	}
	mustCreate(t, st, segment.Tag{AppTag: "new", Step: 3})
	if _, err := st.CreateTags(ctx, []segment.Tag{{AppTag: "bulk", Step: 4}, {AppTag: "still", Step: 4}}); err != nil {
		t.Fatalf("CreateTags: %v", err)
	}

	rows, next := tagsSince(t, st, asOf, "", 0)
	if want := []string{"bulk", "fetched", "given", "new", "updated"}; !slices.Equal(names(rows), want) {
		t.Errorf("TagsSince(asOf) = %v, want %v", names(rows), want)
	}
	for _, r := range rows {
		if r.UpdateTime.Before(asOf) {
			t.Errorf("%s: update_time %v before %v", r.AppTag, r.UpdateTime, asOf)
		}
		if r.AppTag == "given" && r.MaxID != 5 || r.AppTag == "updated" && r.Step != 20 || r.AppTag == "fetched" && r.MaxID != 10 {
			t.Errorf("row %+v, not as written", r)
		}
	}
	if next.Before(asOf) {
		t.Errorf("asOf went back: %v after %v", next, asOf)
	}
	if rows, _ := tagsSince(t, st, asOf, "fetched", 2); !slices.Equal(names(rows), []string{"given", "new"}) {
		t.Errorf("TagsSince(asOf, after fetched, 2) = %v, want [given new]", names(rows))
	}
}

// bulkTags are n tags named prefix0001, prefix0002, …, of several formats.
func bulkTags(prefix string, n int) []segment.Tag {
	tags := make([]segment.Tag, n)
	for i := range tags {
		t := segment.Tag{AppTag: fmt.Sprintf("%s%04d", prefix, i), Step: int64(1 + i%7), Start: int64(1 + i%3),
			Description: "tenant " + fmt.Sprint(i)}
		switch i % 4 {
		case 1:
			t.Format, t.Length, t.Start = segment.FormatFixedLength, 6, 100000
		case 2:
			t.Format, t.Length, t.Start = segment.FormatScrambled, 8, 1
			t.FormatKey = bytes.Repeat([]byte{byte(i)}, 16)
		}
		tags[i] = t
	}
	return tags
}

func testCreateTags(t *testing.T, db DB) {
	st := db.Open(t)
	ctx := t.Context()
	tags := bulkTags("t", 2500) // three chunks
	mustCreate(t, st, tags[1700])
	mustFetch(t, st, tags[1700].AppTag, 0)
	tags = append(tags, segment.Tag{AppTag: seeded, Step: 1})

	created, err := st.CreateTags(ctx, tags)
	if err != nil {
		t.Fatalf("CreateTags: %v", err)
	}
	if len(created) != len(tags) {
		t.Fatalf("CreateTags reported %d tags, want %d", len(created), len(tags))
	}
	for i, ok := range created {
		if want := i != 1700 && i != len(tags)-1; ok != want {
			t.Errorf("created[%d] (%s) = %v, want %v", i, tags[i].AppTag, ok, want)
		}
	}
	rows, err := st.Tags(ctx)
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	if len(rows) != len(tags) {
		t.Fatalf("Tags lists %d rows, want %d", len(rows), len(tags))
	}
	for i, r := range rows[:2500] {
		w := tags[i]
		if i == 1700 {
			w.MaxID = w.Start - 1 + w.Step // fetched before, and left as it was
		} else {
			w.MaxID = w.Start - 1
		}
		if r.AppTag != w.AppTag || r.MaxID != w.MaxID || r.Step != w.Step || r.Start != w.Start || r.Description != w.Description ||
			r.Format != cmp.Or(w.Format, segment.FormatSequential) || r.Length != w.Length || !bytes.Equal(r.FormatKey, w.FormatKey) {
			t.Fatalf("row %d = %+v, want %+v", i, r, w)
		}
	}
	if rows[2500].AppTag != seeded || rows[2500].Step != 100000 {
		t.Errorf("the seeded row changed: %+v", rows[2500])
	}
	// Again: every tag exists.
	again, err := st.CreateTags(ctx, tags[:10])
	if err != nil || slices.Contains(again, true) || len(again) != 10 {
		t.Errorf("CreateTags again = %v, %v; want ten false", again, err)
	}
}

func testCreateTagsRefused(t *testing.T, db DB) {
	st := db.Open(t)
	for _, tc := range []struct {
		name string
		bad  segment.Tag // put at index 1500, in the second chunk
		says string
		want error // nil: any error
	}{
		{"zero step", segment.Tag{AppTag: "bad", Step: 0}, "tags[1500]", segment.ErrInvalidStep},
		{"bad name", segment.Tag{AppTag: "a b", Step: 1}, "tags[1500]", segment.ErrInvalidTag},
		{"repeated name", segment.Tag{AppTag: "r0003", Step: 1}, "tags[1500] repeats", nil},
		{"long description", segment.Tag{AppTag: "bad", Step: 1, Description: strings.Repeat("d", 257)}, "tags[1500]", segment.ErrInvalidDescription},
	} {
		tags := bulkTags("r", 2000)
		tags[1500] = tc.bad
		created, err := st.CreateTags(t.Context(), tags)
		if err == nil || !strings.Contains(err.Error(), tc.says) || tc.want != nil && !errors.Is(err, tc.want) || created != nil {
			t.Errorf("%s: CreateTags = %v, %v; want nothing and an error saying %q, %v", tc.name, created, err, tc.says, tc.want)
		}
	}
	if rows, err := st.Tags(t.Context()); err != nil || len(rows) != 1 {
		t.Errorf("Tags = %v, %v; want only %s", names(rows), err, seeded)
	}
}

// testCreateTagsRace: handles with connections of their own create the
// same tags at once, in different orders: each tag is created once, by one
// of them, and the others report it as existing.
func testCreateTagsRace(t *testing.T, db DB) {
	const handles = 3
	tags := bulkTags("x", 1500)
	results := make([][]bool, handles)
	errs := make([]error, handles)
	var wg sync.WaitGroup
	for h := range handles {
		st := db.Open(t)
		mine := slices.Clone(tags)
		if h%2 == 1 {
			slices.Reverse(mine)
		}
		wg.Go(func() {
			created, err := st.CreateTags(t.Context(), mine)
			if h%2 == 1 {
				slices.Reverse(created)
			}
			results[h], errs[h] = created, err
		})
	}
	wg.Wait()
	for h, err := range errs {
		if err != nil {
			t.Fatalf("handle %d: CreateTags: %v", h, err)
		}
	}
	for i := range tags {
		n := 0
		for h := range handles {
			if results[h][i] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s created by %d handles, want 1", tags[i].AppTag, n)
		}
	}
}
