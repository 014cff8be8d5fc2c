package segment_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/scramble"
	"github.com/idalloc/idalloc/segment"
)

// TestUpdateTagRefuses: a change the domain's rules refuse names its field
// in the words CreateTag uses for it, never reaches the store, and changes
// nothing.
func TestUpdateTagRefuses(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100, Description: "before"})
	a := alloctest.New(t, st, segment.Config{MaxStep: 1000})
	tests := []struct {
		name  string
		tag   string
		c     segment.TagChange
		want  error
		field string
	}{
		{"nothing to change", "t", segment.TagChange{}, segment.ErrNoChange, ""},
		{"invalid tag", "a b", segment.TagChange{Step: new(int64(10))}, segment.ErrInvalidTag, "app_tag"},
		{"step 0", "t", segment.TagChange{Step: new(int64(0))}, segment.ErrInvalidStep, "step"},
		{"negative step", "t", segment.TagChange{Step: new(int64(-5))}, segment.ErrInvalidStep, "step"},
		{"step above the cap", "t", segment.TagChange{Step: new(int64(1001))}, segment.ErrInvalidStep, "step"},
		{"description too long", "t", segment.TagChange{Description: new(strings.Repeat("d", segment.MaxDescription+1))},
			segment.ErrInvalidDescription, "description"},
		{"description with a line break", "t", segment.TagChange{Description: new("a\nb")}, segment.ErrDescriptionNotText, "description"},
		{"description not UTF-8", "t", segment.TagChange{Description: new("\xff")}, segment.ErrDescriptionNotText, "description"},
		{"a good step with a bad description", "t", segment.TagChange{Step: new(int64(10)), Description: new("\x00")},
			segment.ErrDescriptionNotText, "description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.UpdateTag(t.Context(), tt.tag, tt.c)
			if !errors.Is(err, tt.want) {
				t.Fatalf("UpdateTag(%q, %+v) = %v, want %v", tt.tag, tt.c, err, tt.want)
			}
			if e, ok := errs.Describe(err); !ok || e.Kind != errs.BadRequest || e.Field != tt.field {
				t.Errorf("UpdateTag(%q, %+v) = %#v, want kind bad_request naming %q", tt.tag, tt.c, err, tt.field)
			}
		})
	}
	if n := st.updates.Load(); n != 0 {
		t.Errorf("the store was asked %d times, want 0", n)
	}
	if r := a.Tags()[0]; r.Step != 100 || r.Description != "before" {
		t.Errorf("after the refusals, Tags() shows %+v, want step 100 and description before", r)
	}
	// The step cap's words name the cap, as CreateTag's do.
	if _, err := a.UpdateTag(t.Context(), "t", segment.TagChange{Step: new(int64(1001))}); err == nil || err.Error() != "invalid step: must be from 1 to 1000" {
		t.Errorf("step above the cap: got %v, want the words naming the cap", err)
	}
}

// TestUpdateTagErrors: an unknown tag and a store fault, as every call
// answers them.
func TestUpdateTagErrors(t *testing.T) {
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100})
	a := alloctest.New(t, st, segment.Config{})
	if _, err := a.UpdateTag(t.Context(), "nope", segment.TagChange{Step: new(int64(10))}); !errors.Is(err, segment.ErrUnknownTag) {
		t.Errorf("unknown tag: got %v, want ErrUnknownTag", err)
	}
	st.failing.Store(true)
	if _, err := a.UpdateTag(t.Context(), "t", segment.TagChange{Step: new(int64(10))}); !errors.Is(err, segment.ErrUnavailable) {
		t.Errorf("store down: got %v, want ErrUnavailable", err)
	}
	st.failing.Store(false)
	if r := a.Tags()[0]; r.Step != 100 {
		t.Errorf("after the failures, Tags() shows step %d, want 100", r.Step)
	}
}

// TestUpdateTagAppliesAtOnce: on the allocator that takes it, a new step is
// the floor of the very next fetch and Tags lists the changed row, without
// waiting for a reload; max_id does not move.
func TestUpdateTagAppliesAtOnce(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 100})
	a := alloctest.New(t, st, segment.Config{Now: clock.Now, TagRefresh: time.Hour})
	lists := st.lists.Load()
	if _, err := a.Next(ctx, "t"); err != nil { // fetches (0, 100]
		t.Fatal(err)
	}
	got, err := a.UpdateTag(ctx, "t", segment.TagChange{Step: new(int64(500)), Description: new("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != 500 || got.Description != "orders" || got.MaxID != 100 || got.Format != segment.FormatSequential {
		t.Errorf("UpdateTag answered %+v, want step 500, description orders, max_id 100, sequential", got)
	}
	if m := st.maxID("t"); m != 100 {
		t.Errorf("max_id after the update %d, want 100 as before", m)
	}
	if r := a.Tags()[0]; r.Step != 500 || r.Description != "orders" {
		t.Errorf("Tags() lists %+v, want step 500 and description orders", r)
	}
	// The segment lasted between 15 and 30 minutes: the adaptive step
	// keeps 100, which the new floor raises to 500.
	clock.Add(20 * time.Minute)
	if _, err := alloctest.Drain(a, "t", 100); err != nil { // the prefetch starts at the 11th
		t.Fatal(err)
	}
	alloctest.WaitFor(t, func() bool { return st.maxID("t") == 600 })
	if n := st.lists.Load(); n != lists {
		t.Errorf("the tag list was read %d times, want 0", n-lists)
	}
}

// TestUpdateTagDated: a dated tag's period buffers take the new step as
// the floor of their next fetch.
func TestUpdateTagDated(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	a, _ := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 10}, segment.Config{})
	if _, err := a.Next(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateTag(ctx, "d", segment.TagChange{Step: new(int64(50))}); err != nil {
		t.Fatal(err)
	}
	if s, ok := a.Snapshot("d"); !ok || s.RowStep != 50 {
		t.Errorf("snapshot %+v (%v), want the current period's row step 50", s, ok)
	}
}

// TestUpdateTagOfATagNewHere: a tag created on another instance since the
// last reload is served here from its update on, in its own format: a
// scrambled one with the key its row holds.
func TestUpdateTagOfATagNewHere(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{TagRefresh: time.Hour})
	key := make([]byte, scramble.KeySize)
	for i := range key {
		key[i] = byte(i + 1)
	}
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "coupon", Step: 10, Start: 1, Format: segment.FormatScrambled, Length: 8, FormatKey: key}); err != nil {
		t.Fatal(err)
	}
	got, err := a.UpdateTag(ctx, "coupon", segment.TagChange{Description: new("coupons")})
	if err != nil {
		t.Fatal(err)
	}
	if got.FormatKey != nil || a.Tags()[0].FormatKey != nil {
		t.Errorf("UpdateTag answered or listed a key: %+v", got)
	}
	id, err := a.Next(ctx, "coupon")
	if err != nil || id < 10_000_000 || id > 99_999_999 {
		t.Errorf("Next(coupon) = %d, %v; want a scrambled 8-digit ID", id, err)
	}
}
