package segment_test

import (
	"context"
	"maps"
	"testing"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// TestAllStats: AllStats yields what Stats lists, and stops when asked.
func TestAllStats(t *testing.T) {
	a := alloctest.New(t, newFakeStore(segment.Tag{AppTag: "a", Step: 100}, segment.Tag{AppTag: "b", Step: 10},
		segment.Tag{AppTag: "c", Step: 10}), segment.Config{})
	if _, err := a.Next(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	want := map[string]segment.TagStats{}
	for _, st := range a.Stats() {
		want[st.AppTag] = st
	}
	got := map[string]segment.TagStats{}
	for st := range a.AllStats() {
		got[st.AppTag] = st
	}
	if !maps.Equal(got, want) {
		t.Errorf("AllStats yielded %+v, want %+v", got, want)
	}
	n := 0
	for range a.AllStats() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("a loop that breaks at once saw %d tags, want 1", n)
	}
}
