package metrics

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

func TestNewConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil {
		t.Error("second New on one registry succeeded, want an error")
	}
}

func TestWatchErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		src  Sources
	}{
		{"no segments", Sources{}},
		{"negative max tag series", Sources{Segments: newFakeSegments(), MaxTagSeries: -1}},
	} {
		o, err := New(prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Watch(c.src); err == nil {
			t.Errorf("%s: Watch succeeded, want an error", c.name)
		}
	}
}

// TestRank: busiest first by the rate lately, ties by name, after a
// cursor at its rank, with more saying a page follows; before Watch
// every tag is idle, so the order is by name.
func TestRank(t *testing.T) {
	rows := func(tags ...string) []segment.Tag {
		var out []segment.Tag
		for _, tag := range tags {
			out = append(out, segment.Tag{AppTag: tag})
		}
		return out
	}
	all := rows("a", "b", "c", "d", "e")
	f := newFakeSegments("a", "b", "c", "d", "e")
	watched, err := New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Now())
	if err := watched.Watch(Sources{Segments: f, Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	f.setIssued("d", 300)
	f.setIssued("b", 100)
	f.setIssued("e", 100)
	clock.Add(time.Second)
	unwatched, err := New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		o     *Observer
		after string
		limit int
		want  []string
		more  bool
	}{
		{"busiest, ties by name", watched, "", 3, []string{"d", "b", "e"}, true},
		{"after a cursor", watched, "e", 3, []string{"a", "c"}, false},
		{"a page that fills exactly", watched, "b", 3, []string{"e", "a", "c"}, false},
		{"before watch, by name", unwatched, "", 2, []string{"a", "b"}, true},
		{"before watch, after a cursor", unwatched, "c", 5, []string{"d", "e"}, false},
	} {
		page, more := c.o.Rank(all, c.after, c.limit)
		var got []string
		for _, r := range page {
			got = append(got, r.AppTag)
		}
		if !slices.Equal(got, c.want) || more != c.more {
			t.Errorf("%s: got %v more %v, want %v more %v", c.name, got, more, c.want, c.more)
		}
	}
	if got := unwatched.TotalBuffered(); got != 0 {
		t.Errorf("TotalBuffered before Watch = %d, want 0", got)
	}
	if got := watched.TotalBuffered(); got != 5*42 {
		t.Errorf("TotalBuffered = %d, want %d", got, 5*42)
	}
}
