package segment_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// newTags are n sequential tags to create, named c0000, c0001, …
func newTags(n int) []segment.NewTag {
	tags := make([]segment.NewTag, n)
	for i := range tags {
		tags[i] = segment.NewTag{AppTag: fmt.Sprintf("c%04d", i), Step: 100}
	}
	return tags
}

// TestCreateTagsRefusesBeforeWriting: the first entry at fault refuses the
// whole request, naming it as tags[i].field, in CreateTag's words and
// sentinel, and nothing is written.
func TestCreateTagsRefusesBeforeWriting(t *testing.T) {
	tests := []struct {
		name      string
		edit      func([]segment.NewTag) []segment.NewTag
		kind      errs.Kind
		field     string
		msg       string
		sentinel  error
		sentinel2 error // also, when set
	}{
		{"none", func([]segment.NewTag) []segment.NewTag { return nil },
			errs.BadRequest, "tags", "invalid tags: no tags given: give at least one", segment.ErrNoTags, nil},
		{"too many", func([]segment.NewTag) []segment.NewTag { return newTags(segment.MaxCreateTags + 1) },
			errs.BadRequest, "tags", "invalid tags: more than 100000 tags: create them in several requests", segment.ErrTooManyTags, nil},
		{"step above the cap", func(n []segment.NewTag) []segment.NewTag { n[3].Step = 2_000_000; return n },
			errs.BadRequest, "tags[3].step", "invalid tags[3].step: must be from 1 to 1000000", segment.ErrInvalidStep, nil},
		{"bad name", func(n []segment.NewTag) []segment.NewTag { n[0].AppTag = "a b"; return n },
			errs.BadRequest, "tags[0].app_tag", "invalid tags[0].app_tag: must match ^[A-Za-z0-9_.:-]{1,64}$", segment.ErrInvalidTag, nil},
		{"bad format", func(n []segment.NewTag) []segment.NewTag { n[2].Format = "roman"; return n },
			errs.BadRequest, "tags[2].format", "invalid tags[2].format: must be sequential, fixed_length, scrambled or dated", segment.ErrInvalidFormat, nil},
		{"dated on a store without periods", func(n []segment.NewTag) []segment.NewTag {
			n[1].Format, n[1].Period = segment.FormatDated, dated.Day
			return n
		}, errs.BadRequest, "tags[1].format", "", segment.ErrDatedUnsupported, segment.ErrFormatUnsupported},
		{"a name twice", func(n []segment.NewTag) []segment.NewTag { n[4].AppTag = n[1].AppTag; return n },
			errs.BadRequest, "tags[4].app_tag", "invalid tags[4].app_tag: the app_tag of tags[1] again: each tag is created once", segment.ErrTagRepeated, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newFakeStore()
			a := alloctest.New(t, st, segment.Config{})
			made, err := a.CreateTags(context.Background(), tt.edit(newTags(5)))
			e, ok := errs.Describe(err)
			if !ok || made != nil {
				t.Fatalf("CreateTags = %v, %v; want nothing and a refusal", made, err)
			}
			if e.Kind != tt.kind || e.Field != tt.field || tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("refusal %s %q %q, want %s %q %q", e.Kind, e.Field, err.Error(), tt.kind, tt.field, tt.msg)
			}
			if !errors.Is(err, tt.sentinel) || tt.sentinel2 != nil && !errors.Is(err, tt.sentinel2) {
				t.Errorf("refusal %v is not %v (and %v)", err, tt.sentinel, tt.sentinel2)
			}
			if len(st.rows) != 0 || len(a.Tags()) != 0 {
				t.Errorf("the refused request wrote %d rows, lists %d", len(st.rows), len(a.Tags()))
			}
		})
	}
}

// TestCreateTagsSkipsExisting: entries whose tags exist are not written
// and do not stop the others, which are created, served and listed at
// once; the error lists the entries that existed and is ErrTagExists. A
// scrambled entry gets a key of its own, which nothing returns.
func TestCreateTagsSkipsExisting(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(segment.Tag{AppTag: "c0001", Step: 7, MaxID: 70}, segment.Tag{AppTag: "c0003", Step: 7})
	a := alloctest.New(t, st, segment.Config{})
	req := newTags(5)
	req[4].Format, req[4].Length = segment.FormatScrambled, 8
	made, err := a.CreateTags(ctx, req)

	var exist *segment.TagsExistError
	if !errors.As(err, &exist) || !slices.Equal(exist.Index, []int{1, 3}) {
		t.Fatalf("CreateTags error %v, want a TagsExistError of entries 1 and 3", err)
	}
	if e, _ := errs.Describe(err); !errors.Is(err, segment.ErrTagExists) || e.Kind != errs.Exists || e.Field != "tags[1].app_tag" ||
		err.Error() != "the app_tag of tags[1] exists already, as does that of 1 more entry: not created; the other 3 were" {
		t.Errorf("error %v (%+v), want ErrTagExists naming tags[1].app_tag", err, e)
	}
	if got := tagNames(made); got != "c0000 c0002 c0004" {
		t.Errorf("created %q, want c0000 c0002 c0004", got)
	}
	for _, m := range made {
		if m.MaxID != 0 || m.Start != 1 || m.FormatKey != nil {
			t.Errorf("created %+v, want max_id 0, start 1, no key", m)
		}
	}
	if got := tagNames(a.Tags()); got != "c0000 c0001 c0002 c0003 c0004" {
		t.Errorf("Tags lists %q", got)
	}
	if r := st.rows["c0001"]; r.Step != 7 || r.MaxID != 70 {
		t.Errorf("the existing row changed: %+v", r)
	}
	if key := st.rows["c0004"].FormatKey; len(key) == 0 || bytes.Equal(key, make([]byte, len(key))) {
		t.Errorf("scrambled c0004 stored key %x, want one made for it", key)
	}
	for _, tag := range []string{"c0000", "c0002", "c0004"} {
		if _, err := a.Next(ctx, tag); err != nil {
			t.Errorf("Next(%s) = %v, want it served at once", tag, err)
		}
	}
}

// TestCreateTagsStoreFailsPartWay: a store fault after some chunks leaves
// those created and served; the error is ErrUnavailable saying how far it
// got, and a second request creates the rest, reporting the first ones as
// existing.
func TestCreateTagsStoreFailsPartWay(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	st.createFailAt = 3
	a := alloctest.New(t, st, segment.Config{})
	made, err := a.CreateTags(ctx, newTags(5))
	if !errors.Is(err, segment.ErrUnavailable) || tagNames(made) != "c0000 c0001 c0002" {
		t.Fatalf("CreateTags = %q, %v; want the first three and ErrUnavailable", tagNames(made), err)
	}
	if want := "the entries before tags[3] were written (3 tags created, 0 existed), the rest not"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if _, err := a.Next(ctx, "c0002"); err != nil {
		t.Errorf("Next(c0002) = %v, want it served", err)
	}
	st.createFailAt = 0
	made, err = a.CreateTags(ctx, newTags(5))
	var exist *segment.TagsExistError
	if !errors.As(err, &exist) || !slices.Equal(exist.Index, []int{0, 1, 2}) || tagNames(made) != "c0003 c0004" {
		t.Errorf("CreateTags again = %q, %v; want c0003 c0004 created and entries 0 to 2 existing", tagNames(made), err)
	}
}

// TestCreateTagsStoreDown: a store down before the first chunk creates
// nothing: ErrUnavailable.
func TestCreateTagsStoreDown(t *testing.T) {
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{})
	st.failing.Store(true)
	made, err := a.CreateTags(context.Background(), newTags(2))
	if !errors.Is(err, segment.ErrUnavailable) || made != nil {
		t.Errorf("CreateTags with the store down = %v, %v; want nothing, ErrUnavailable", made, err)
	}
}
