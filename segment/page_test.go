package segment_test

import (
	"slices"
	"testing"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// reversed ranks rows in reverse name order, for the Rank case.
type reversed struct{}

func (reversed) Rank(rows []segment.Tag, after string, limit int) ([]segment.Tag, bool) {
	var out []segment.Tag
	for i := len(rows) - 1; i >= 0; i-- {
		if after == "" || rows[i].AppTag < after {
			out = append(out, rows[i])
		}
	}
	return out[:min(limit, len(out))], len(out) > limit
}

// TestTagPage: a page by name is the prefix's tags after the cursor, at
// most the limit, with Total counting the prefix's tags and Next the
// page's last tag while more follow; a Ranker orders the prefix's tags.
func TestTagPage(t *testing.T) {
	var sorted []segment.Tag
	for _, tag := range []string{"a0", "a1", "a2", "a3", "b0", "b1", "order"} {
		sorted = append(sorted, segment.Tag{AppTag: tag})
	}
	for _, c := range []struct {
		name  string
		q     segment.PageQuery
		want  []string
		total int
		next  string
	}{
		{"everything", segment.PageQuery{Limit: 10}, []string{"a0", "a1", "a2", "a3", "b0", "b1", "order"}, 7, ""},
		{"a first page", segment.PageQuery{Limit: 3}, []string{"a0", "a1", "a2"}, 7, "a2"},
		{"the next page", segment.PageQuery{After: "a2", Limit: 3}, []string{"a3", "b0", "b1"}, 7, "b1"},
		{"the last page fills exactly", segment.PageQuery{After: "b0", Limit: 2}, []string{"b1", "order"}, 7, ""},
		{"a prefix", segment.PageQuery{Prefix: "b", Limit: 10}, []string{"b0", "b1"}, 2, ""},
		{"a prefix and a cursor", segment.PageQuery{Prefix: "a", After: "a1", Limit: 1}, []string{"a2"}, 4, "a2"},
		{"a cursor before the prefix", segment.PageQuery{Prefix: "b", After: "a9", Limit: 10}, []string{"b0", "b1"}, 2, ""},
		{"a cursor past the prefix", segment.PageQuery{Prefix: "a", After: "b0", Limit: 10}, nil, 4, ""},
		{"a cursor between tags", segment.PageQuery{After: "a", Limit: 2}, []string{"a0", "a1"}, 7, "a1"},
		{"a prefix no tag has", segment.PageQuery{Prefix: "zz", Limit: 10}, nil, 0, ""},
		{"a whole tag as prefix", segment.PageQuery{Prefix: "order", Limit: 10}, []string{"order"}, 1, ""},
		{"a limit below 1 is 1", segment.PageQuery{Limit: 0}, []string{"a0"}, 7, "a0"},
		{"ranked", segment.PageQuery{Prefix: "a", Limit: 3, Rank: reversed{}}, []string{"a3", "a2", "a1"}, 4, "a1"},
		{"ranked, after a cursor", segment.PageQuery{Prefix: "a", After: "a1", Limit: 3, Rank: reversed{}}, []string{"a0"}, 4, ""},
	} {
		p := segment.PageOf(sorted, c.q)
		var got []string
		for _, r := range p.Tags {
			got = append(got, r.AppTag)
		}
		if !slices.Equal(got, c.want) || p.Total != c.total || p.Next != c.next {
			t.Errorf("%s: got %v total %d next %q, want %v total %d next %q", c.name, got, p.Total, p.Next, c.want, c.total, c.next)
		}
	}
}

// TestAllocatorTagPage: the allocator pages through its own tag list,
// the store's rows sorted by name.
func TestAllocatorTagPage(t *testing.T) {
	a := alloctest.New(t, newFakeStore(
		segment.Tag{AppTag: "order", Step: 10}, segment.Tag{AppTag: "a1", Step: 10}, segment.Tag{AppTag: "a0", Step: 10},
	), segment.Config{})
	p := a.TagPage(segment.PageQuery{Prefix: "a", Limit: 1})
	if len(p.Tags) != 1 || p.Tags[0].AppTag != "a0" || p.Total != 2 || p.Next != "a0" {
		t.Fatalf("first page %+v, want a0 of 2, next a0", p)
	}
	p = a.TagPage(segment.PageQuery{Prefix: "a", After: p.Next, Limit: 1})
	if len(p.Tags) != 1 || p.Tags[0].AppTag != "a1" || p.Next != "" {
		t.Errorf("second page %+v, want a1 and no next", p)
	}
}
