package segment_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// TestTagsFromReload: Tags answers from the rows of the last reload and the
// tags created since, and never asks the store.
func TestTagsFromReload(t *testing.T) {
	ctx := context.Background()
	updated := time.Date(2040, 1, 2, 3, 4, 5, 6e6, time.UTC)
	st := newFakeStore(
		segment.Tag{AppTag: "b", MaxID: 7, Step: 10, Description: "second", UpdateTime: updated},
		segment.Tag{AppTag: "a", MaxID: 3, Step: 20, Description: "first", UpdateTime: updated},
	)
	clock := testclock.New(time.Date(2041, 1, 1, 0, 0, 0, 0, time.UTC))
	a := alloctest.New(t, st, segment.Config{TagRefresh: time.Hour, Now: clock.Now})
	lists := st.lists.Load()

	for range 100 {
		a.Tags()
	}
	got := a.Tags()
	want := []segment.Tag{
		{AppTag: "a", MaxID: 3, Step: 20, Description: "first", UpdateTime: updated, Format: segment.FormatSequential},
		{AppTag: "b", MaxID: 7, Step: 10, Description: "second", UpdateTime: updated, Format: segment.FormatSequential},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tags() = %+v, want %+v", got, want)
	}

	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "ab", Step: 5, Start: new(int64(100)), Description: "new"}); err != nil {
		t.Fatal(err)
	}
	got = a.Tags()
	if names := tagNames(got); names != "a ab b" {
		t.Errorf("after CreateTag, Tags() lists %q, want %q", names, "a ab b")
	}
	if r := got[1]; r.MaxID != 99 || r.Step != 5 || r.Description != "new" || !r.UpdateTime.Equal(clock.Now()) {
		t.Errorf("created row = %+v, want max_id 99, step 5, description new, update_time %s", r, clock.Now())
	}
	if n := st.lists.Load(); n != lists {
		t.Errorf("Tags and CreateTag listed the store %d times, want 0", n-lists)
	}

	// A store fault keeps the last list.
	st.failing.Store(true)
	if names := tagNames(a.Tags()); names != "a ab b" {
		t.Errorf("with the store down, Tags() lists %q, want the last list", names)
	}
}

// TestTagsFollowReloads: rows written by another instance show in Tags after
// the next reload, with their new max_id.
func TestTagsFollowReloads(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(segment.Tag{AppTag: "a", Step: 10})
	a := alloctest.New(t, st, segment.Config{TagRefresh: 10 * time.Millisecond})
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "c", Step: 10, Start: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fetch(ctx, "a", segment.MaxUsableID, 0); err != nil {
		t.Fatal(err)
	}
	alloctest.WaitFor(t, func() bool {
		tags := a.Tags()
		return tagNames(tags) == "a c" && tags[0].MaxID == 10
	})
}

func tagNames(tags []segment.Tag) string {
	names := make([]string, len(tags))
	for i, t := range tags {
		names[i] = t.AppTag
	}
	return strings.Join(names, " ")
}

// TestCreateTagReturnsStored: CreateTag answers the tag as stored, its
// defaults applied, so that no front end applies a rule to learn it.
func TestCreateTagReturnsStored(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{})
	tests := []struct {
		tag  segment.NewTag
		want segment.Tag
	}{
		{segment.NewTag{AppTag: "seq", Step: 5, Description: "d"},
			segment.Tag{AppTag: "seq", Step: 5, Description: "d", Start: 1, Format: segment.FormatSequential}},
		{segment.NewTag{AppTag: "fix", Step: 5, Start: new(int64(7)), Format: segment.FormatFixedLength, Length: 4},
			segment.Tag{AppTag: "fix", Step: 5, Start: 1000, MaxID: 999, Format: segment.FormatFixedLength, Length: 4}},
		{segment.NewTag{AppTag: "scr", Step: 5, Format: segment.FormatScrambled, Length: 8},
			segment.Tag{AppTag: "scr", Step: 5, Start: 1, Format: segment.FormatScrambled, Length: 8}},
	}
	for _, tt := range tests {
		got, err := a.CreateTag(ctx, tt.tag)
		if err != nil {
			t.Fatalf("CreateTag(%+v): %v", tt.tag, err)
		}
		if got.UpdateTime.IsZero() {
			t.Errorf("CreateTag(%+v) UpdateTime is zero, want the time of creation", tt.tag)
		}
		got.UpdateTime = time.Time{}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("CreateTag(%+v) = %+v, want %+v", tt.tag, got, tt.want)
		}
	}
}
