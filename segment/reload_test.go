package segment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// manyTags are n sequential tags named t0000, t0001, …
func manyTags(n int) []segment.Tag {
	tags := make([]segment.Tag, n)
	for i := range tags {
		tags[i] = segment.Tag{AppTag: fmt.Sprintf("t%04d", i), Step: 10, Start: 1}
	}
	return tags
}

// TestReloadReadsWhatChanged: a reload reads the rows written since the
// one before, not every row, and applies them: another instance's fetch
// (max_id), a tag it created (served here), a step and description it
// changed (the step becomes this instance's floor). The list Tags shows
// is copied only when something changed.
func TestReloadReadsWhatChanged(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(manyTags(2500)...)
	clock := testclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	a := alloctest.New(t, st, segment.Config{TagRefresh: time.Hour, Now: clock.Now})
	if got := st.listed.Load(); got != 2500 {
		t.Fatalf("the start read %d rows, want every one, 2500", got)
	}
	if got := st.lists.Load(); got != 3 {
		t.Errorf("the start read in %d calls, want 3 pages of at most 1000", got)
	}
	listed := a.Tags()

	// Another instance writes.
	step, desc := int64(50), "changed"
	if _, err := st.Fetch(ctx, "t0001", segment.MaxUsableID, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "new", Step: 1000, Start: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateTag(ctx, "t0002", segment.TagChange{Step: &step, Description: &desc}); err != nil {
		t.Fatal(err)
	}
	before := st.listed.Load()
	alloctest.ReloadOnMiss(t, a, clock)
	if got := st.listed.Load() - before; got != 3 {
		t.Errorf("the reload read %d rows, want the 3 written", got)
	}
	tags := a.Tags()
	if len(tags) != 2501 || tags[2500].AppTag != "t2499" {
		t.Fatalf("Tags lists %d rows, want 2501", len(tags))
	}
	byName := map[string]segment.Tag{}
	for _, r := range tags {
		byName[r.AppTag] = r
	}
	if r := byName["t0001"]; r.MaxID != 10 {
		t.Errorf("t0001 = %+v, want max_id 10, fetched by another instance", r)
	}
	if r := byName["t0002"]; r.Step != 50 || r.Description != "changed" {
		t.Errorf("t0002 = %+v, want step 50 and its new description", r)
	}
	if id, err := a.Next(ctx, "new"); err != nil || id != 1 {
		t.Errorf("Next(new) = %d, %v; want 1", id, err)
	}
	if s, _ := a.Snapshot("t0002"); s.RowStep != 50 {
		t.Errorf("t0002's row step here is %d, want 50", s.RowStep)
	}
	if &listed[0] == &tags[0] {
		t.Error("Tags is the list from before the changes")
	}

	// This instance's own fetch of new wrote its row: the next reload
	// reads it. After it, nothing is written: the rows within the overlap
	// are read again, and the list stays as it is, not copied.
	alloctest.ReloadOnMiss(t, a, clock)
	if r := a.Tags()[0]; r.AppTag != "new" || r.MaxID != 1000 {
		t.Errorf("new = %+v, want max_id 1000, fetched here", r)
	}
	tags = a.Tags()
	before = st.listed.Load()
	alloctest.ReloadOnMiss(t, a, clock)
	if got := st.listed.Load() - before; got > 4 {
		t.Errorf("a reload with nothing written read %d rows, want at most the 4 written lately", got)
	}
	if again := a.Tags(); &again[0] != &tags[0] {
		t.Error("a reload that changed nothing copied the list")
	}
}

// TestFullReloadSeesWhatChangesCannot: rows changed without their
// update_time (an operator's statement) or deleted show at the refresher's
// next full reload.
func TestFullReloadSeesWhatChangesCannot(t *testing.T) {
	st := newFakeStore(manyTags(3)...)
	a := alloctest.New(t, st, segment.Config{TagRefresh: time.Millisecond})
	st.edit("t0000", func(r *segment.Tag) bool { r.Description = "by hand"; return true })
	st.edit("t0001", func(*segment.Tag) bool { return false })
	alloctest.WaitFor(t, func() bool {
		tags := a.Tags()
		return tagNames(tags) == "t0000 t0002" && tags[0].Description == "by hand"
	})
}

// TestStoreClockBackReadsEveryRow: when the store's clock reads earlier
// than at the last reload (set back, or another node of a cluster), rows
// written since may carry times before the moment the reload asks from:
// the reload reads every row.
func TestStoreClockBackReadsEveryRow(t *testing.T) {
	storeClock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	st := newFakeStore(manyTags(1500)...)
	st.clock = storeClock.Now
	clock := testclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	a := alloctest.New(t, st, segment.Config{TagRefresh: time.Hour, Now: clock.Now})

	storeClock.Add(-time.Hour)
	if err := st.CreateTag(context.Background(), segment.Tag{AppTag: "late", Step: 5, Start: 1}); err != nil {
		t.Fatal(err)
	}
	before := st.listed.Load()
	alloctest.ReloadOnMiss(t, a, clock)
	if got := st.listed.Load() - before; got != 1501 {
		t.Errorf("the reload read %d rows, want every one, 1501", got)
	}
	if _, err := a.Next(context.Background(), "late"); err != nil {
		t.Errorf("Next(late) = %v, want it served", err)
	}
}

// TestReloadFailurePartWay: a reload that fails after some pages keeps
// what it applied, and the next asks from where the last whole one stood.
func TestReloadFailurePartWay(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(manyTags(10)...)
	clock := testclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	a := alloctest.New(t, st, segment.Config{TagRefresh: time.Hour, Now: clock.Now})
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "x", Step: 5, Start: 1}); err != nil {
		t.Fatal(err)
	}
	st.failing.Store(true)
	clock.Add(time.Second)
	if _, err := a.Next(ctx, "x"); !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("Next(x) with the store down = %v, want ErrUnavailable", err)
	}
	st.failing.Store(false)
	alloctest.ReloadOnMiss(t, a, clock)
	if _, err := a.Next(ctx, "x"); err != nil {
		t.Errorf("Next(x) after the store came back = %v", err)
	}
}
