package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// pagingRig is a rig whose fake serves order, test_business, a0…a9 and
// b0…b4.
func pagingRig(t *testing.T) *rig {
	t.Helper()
	rg := newRig(t, nil)
	rg.freeze() // samples only when a test ages them
	for _, p := range []struct {
		prefix string
		n      int
	}{{"a", 10}, {"b", 5}} {
		for i := range p.n {
			tag := fmt.Sprintf("%s%d", p.prefix, i)
			rg.seg.tags[tag] = segment.Tag{AppTag: tag, Step: 10}
		}
	}
	return rg
}

// listed is a listing's answer: its tags' names, total and next.
type listed struct {
	tags  []string
	total float64
	next  any
}

func (rg *rig) list(t *testing.T, target string) listed {
	t.Helper()
	got := rg.do(t, "GET", target, "", adminAuth...)
	if got.status != http.StatusOK || got.code() != 0.0 {
		t.Fatalf("GET %s: %d %s, want 200 success", target, got.status, got.raw)
	}
	var l listed
	for _, x := range got.body["tags"].([]any) {
		l.tags = append(l.tags, x.(map[string]any)["app_tag"].(string))
	}
	l.total, _ = got.body["total"].(float64)
	l.next = got.body["next"]
	return l
}

func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// TestListingPages: both listings page by name over the sorted tags:
// prefix, after and limit, with total counting the tags the prefix keeps
// and next naming the page's last tag while more follow.
func TestListingPages(t *testing.T) {
	all := append(append(seq("a", 0, 9), seq("b", 0, 4)...), "order", "test_business")
	tests := []struct {
		query string
		want  []string
		total float64
		next  any
	}{
		{"", all, 17, nil},
		{"limit=5", seq("a", 0, 4), 17, "a4"},
		{"limit=5&after=a4", seq("a", 5, 9), 17, "a9"},
		{"limit=7&after=b4", []string{"order", "test_business"}, 17, nil},
		{"prefix=a", seq("a", 0, 9), 10, nil},
		{"prefix=a&limit=3&after=a2", seq("a", 3, 5), 10, "a5"},
		{"prefix=a&limit=3&after=a6", seq("a", 7, 9), 10, nil}, // the last page fills exactly
		{"prefix=b&after=a5", seq("b", 0, 4), 5, nil},          // after before the prefix's tags
		{"prefix=a&after=b0", nil, 10, nil},                    // after past them
		{"prefix=a1", []string{"a1"}, 1, nil},
		{"prefix=zz", nil, 0, nil},
		{"after=zzz", nil, 17, nil},
		{"after=a", seq("a", 0, 9)[:10], 17, "a9"}, // between tags
		{"prefix=test_&sort=name", []string{"test_business"}, 1, nil},
	}
	for _, route := range []string{"/tags", "/status"} {
		for _, tt := range tests {
			t.Run(route+"?"+tt.query, func(t *testing.T) {
				rg := pagingRig(t)
				q := tt.query
				if q == "after=a" {
					q += "&limit=10"
				}
				got := rg.list(t, route+"?"+q)
				if !slices.Equal(got.tags, tt.want) || got.total != tt.total || got.next != tt.next {
					t.Errorf("got %v total %v next %v, want %v total %v next %v", got.tags, got.total, got.next, tt.want, tt.total, tt.next)
				}
				// A page reads its own tags and no other.
				if n := rg.seg.snapshots.Load(); n != int64(len(tt.want)) {
					t.Errorf("the page read %d tags' figures, want %d", n, len(tt.want))
				}
			})
		}
	}
}

// TestListingWalk: following next from page to page lists every tag the
// prefix keeps once, in order, by name and busiest first.
func TestListingWalk(t *testing.T) {
	rg := pagingRig(t)
	for i := range 10 {
		rg.seg.setIssued(fmt.Sprintf("a%d", i), int64(i%4)) // ties, broken by name
	}
	for _, c := range []struct {
		route, query string
		want         []string
	}{
		{"/tags", "", append(append(seq("a", 0, 9), seq("b", 0, 4)...), "order", "test_business")},
		{"/status", "prefix=a", seq("a", 0, 9)},
		{"/status", "prefix=a&sort=busiest", []string{"a3", "a7", "a2", "a6", "a1", "a5", "a9", "a0", "a4", "a8"}},
		{"/tags", "sort=busiest&prefix=b", seq("b", 0, 4)},
	} {
		for _, limit := range []int{1, 3, 4} {
			var got []string
			after := ""
			for page := 0; ; page++ {
				if page > 20 {
					t.Fatalf("%s?%s: no end after 20 pages", c.route, c.query)
				}
				l := rg.list(t, fmt.Sprintf("%s?%s&limit=%d&after=%s", c.route, c.query, limit, after))
				got = append(got, l.tags...)
				if l.next == nil {
					break
				}
				after = l.next.(string)
				if after != l.tags[len(l.tags)-1] {
					t.Errorf("next %q is not the page's last tag %v", after, l.tags)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s?%s by %d: walked %v, want %v", c.route, c.query, limit, got, c.want)
			}
		}
	}
}

// TestListingDefaults: without parameters GET /tags answers its first
// 1,000 tags with next, and /status its first 100.
func TestListingDefaults(t *testing.T) {
	rg := newRig(t, nil)
	for i := range 1500 {
		tag := fmt.Sprintf("t%04d", i)
		rg.seg.tags[tag] = segment.Tag{AppTag: tag, Step: 10}
	}
	for _, c := range []struct {
		route string
		n     int
	}{{"/tags", 1000}, {"/status", 100}} {
		l := rg.list(t, c.route)
		if len(l.tags) != c.n || l.total != 1502 || l.next != l.tags[c.n-1] {
			t.Errorf("%s: %d tags, total %v, next %v; want %d, 1502 and the last of them", c.route, len(l.tags), l.total, l.next, c.n)
		}
	}
}

// TestListingRefusals: a listing's parameter that is not well formed is
// refused naming it, and reads no tag.
func TestListingRefusals(t *testing.T) {
	tests := []struct {
		route, query, field string
	}{
		{"/tags", "limit=0", "limit"},
		{"/tags", "limit=10001", "limit"},
		{"/status", "limit=1001", "limit"},
		{"/tags", "limit=abc", "limit"},
		{"/tags", "limit=%2B5", "limit"},
		{"/tags", "limit=05", "limit"},
		{"/tags", "limit=-1", "limit"},
		{"/tags", "limit=5&limit=6", "limit"},
		{"/tags", "prefix=bad!", "prefix"},
		{"/status", "prefix=" + strings.Repeat("a", 65), "prefix"},
		{"/status", "prefix=a&prefix=b", "prefix"},
		{"/tags", "after=no%20space", "after"},
		{"/status", "after=%zz", "after"},
		{"/status", "sort=size", "sort"},
		{"/tags", "sort=busiest&sort=name", "sort"},
	}
	for _, tt := range tests {
		t.Run(tt.route+"?"+tt.query, func(t *testing.T) {
			rg := pagingRig(t)
			got := rg.do(t, "GET", tt.route+"?"+tt.query, "", adminAuth...)
			if got.status != http.StatusBadRequest || got.code() != 1.0 || got.body["field"] != tt.field {
				t.Errorf("got %d %s, want 400 naming %s", got.status, got.raw, tt.field)
			}
			if n := rg.seg.snapshots.Load(); n != 0 {
				t.Errorf("a refused listing read %d tags", n)
			}
		})
	}
}

// TestStatusBusiestFollowsTheRate: busiest first ranks by the rate of IDs
// lately, not by the count since the start: a tag that was busy and went
// quiet falls behind the tags busy now.
func TestStatusBusiestFollowsTheRate(t *testing.T) {
	rg := pagingRig(t)
	rg.seg.setIssued("a9", 1_000_000)
	rg.seg.setIssued("b2", 10)
	if l := rg.list(t, "/status?sort=busiest&limit=3"); !slices.Equal(l.tags, []string{"a9", "b2", "a0"}) {
		t.Fatalf("first sample: %v, want a9, b2, then a0 first of the idle by name", l.tags)
	}
	rg.seg.setIssued("b2", 20)
	rg.seg.setIssued("order", 5)
	rg.ageSamples()
	if l := rg.list(t, "/status?sort=busiest&limit=3"); !slices.Equal(l.tags, []string{"b2", "order", "a9"}) {
		t.Errorf("an hour later: %v, want b2 (10 since), order (5 since), then a9, idle for an hour, ahead of the never busy", l.tags)
	}
}

// ageSamples moves the frozen clock an hour on, so the next request
// samples again: no test waits for the clock.
func (rg *rig) ageSamples() { rg.clock.Load().Add(time.Hour) }
