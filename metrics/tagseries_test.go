package metrics

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// perTagFamilies are the metrics labelled by app_tag.
var perTagFamilies = []string{"idalloc_ids_issued_total", "idalloc_segment_ids_buffered", "idalloc_segment_step"}

// seriesRig is an Observer on n fake tags, tag-0000 issuing 0 IDs up to
// tag-<n-1> issuing n-1, with at most max tags having series of their
// own and a frozen clock.
type seriesRig struct {
	obs   *Observer
	reg   *prometheus.Registry
	seg   *fakeSegments
	clock *testclock.Clock
}

func newSeriesRig(t *testing.T, n, max int) *seriesRig {
	t.Helper()
	rg := &seriesRig{reg: prometheus.NewRegistry(), seg: newFakeSegments(), clock: testclock.New(time.Now())}
	var err error
	if rg.obs, err = New(rg.reg); err != nil {
		t.Fatal(err)
	}
	if err := rg.obs.Watch(Sources{Segments: rg.seg, MaxTagSeries: max, Now: rg.clock.Now}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rg.seg.setIssued(fmt.Sprintf("tag-%04d", i), int64(i))
	}
	return rg
}

// ageSamples moves the clock an hour on, so the next scrape samples and
// chooses again: no test waits for the clock.
func (rg *seriesRig) ageSamples() { rg.clock.Add(time.Hour) }

// perTag is one scrape's per-tag values: family → app_tag → value.
type perTag map[string]map[string]float64

func scrapePerTag(t *testing.T, rg *seriesRig) perTag {
	t.Helper()
	families, err := rg.reg.Gather() // fails on a series given twice
	if err != nil {
		t.Fatal(err)
	}
	out := perTag{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			tag, segment := "", true
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "app_tag":
					tag = l.GetValue()
				case "mode":
					segment = l.GetValue() == "segment"
				}
			}
			if tag == "" || !segment {
				continue
			}
			if out[f.GetName()] == nil {
				out[f.GetName()] = map[string]float64{}
			}
			// Nil-safe getters: a counter has no gauge, and the other way round.
			out[f.GetName()][tag] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

// TestTagSeriesCapped: with 5,000 tags and max_tag_series 100 a scrape has
// the 100 busiest tags' series and _other's, for each per-tag metric, and
// the values add up to every tag's.
func TestTagSeriesCapped(t *testing.T) {
	const n, max = 5000, 100
	rg := newSeriesRig(t, n, max)
	got := scrapePerTag(t, rg)
	for _, fam := range perTagFamilies {
		if len(got[fam]) != max+1 {
			t.Errorf("%s has %d app_tag values, want %d and _other", fam, len(got[fam]), max)
		}
		for i := n - max; i < n; i++ {
			if _, ok := got[fam][fmt.Sprintf("tag-%04d", i)]; !ok {
				t.Errorf("%s lacks tag-%04d, one of the %d busiest", fam, i, max)
				break
			}
		}
	}
	want := map[string]float64{
		"idalloc_ids_issued_total":     n * (n - 1) / 2,
		"idalloc_segment_ids_buffered": 42 * n,
		"idalloc_segment_step":         2000 * n,
	}
	for fam, w := range want {
		var sum float64
		for _, v := range got[fam] {
			sum += v
		}
		if sum != w {
			t.Errorf("%s sums to %v over its series, want %v", fam, sum, w)
		}
	}
}

// TestTagSeriesMoves: when the busiest tags change, the set follows at
// the next choice, and _other's counter counts exactly the IDs tags
// issued while without series of their own: it never falls.
func TestTagSeriesMoves(t *testing.T) {
	const n, max = 500, 10
	rg := newSeriesRig(t, n, max)
	other := func(p perTag) float64 { return p["idalloc_ids_issued_total"][otherTag] }
	first := scrapePerTag(t, rg)
	if _, ok := first["idalloc_ids_issued_total"]["tag-0499"]; !ok {
		t.Fatalf("the busiest tag has no series: %v", first["idalloc_ids_issued_total"])
	}
	wantOther := float64((n - max) * (n - max - 1) / 2) // tag-0000 … tag-0489

	// tag-0000 … tag-0009 issue a million each, among the others: _other
	// counts them; after the next choice they have series of their own.
	for i := range max {
		rg.seg.setIssued(fmt.Sprintf("tag-%04d", i), int64(i)+1_000_000)
	}
	wantOther += max * 1_000_000
	if got := other(scrapePerTag(t, rg)); got != wantOther {
		t.Fatalf("_other before the next choice = %v, want %v", got, wantOther)
	}
	rg.ageSamples()
	moved := scrapePerTag(t, rg)
	if got := other(moved); got != wantOther {
		t.Errorf("_other after the choice = %v, want %v: moving tags must not change it", got, wantOther)
	}
	for i := range max {
		if _, ok := moved["idalloc_ids_issued_total"][fmt.Sprintf("tag-%04d", i)]; !ok {
			t.Errorf("tag-%04d, now the busiest, has no series", i)
		}
	}
	if _, ok := moved["idalloc_ids_issued_total"]["tag-0499"]; ok {
		t.Errorf("tag-0499, idle since, kept its series")
	}
	// tag-0499, now among the others, issues 7 more: _other counts 7.
	rg.seg.setIssued("tag-0499", 499+7)
	if got := other(scrapePerTag(t, rg)); got != wantOther+7 {
		t.Errorf("_other = %v, want %v", got, wantOther+7)
	}

	// Random traffic and choices: _other never falls, no scrape has more
	// than max tags of its own, and a counter of its own never falls.
	r := rand.New(rand.NewPCG(1, 2))
	issued := map[string]int64{}
	for i := range n {
		issued[fmt.Sprintf("tag-%04d", i)] = int64(i) + 1_000_000
	}
	last := scrapePerTag(t, rg)
	for round := range 30 {
		for range 20 {
			tag := fmt.Sprintf("tag-%04d", r.IntN(n))
			issued[tag] += r.Int64N(1_000_000)
			rg.seg.setIssued(tag, issued[tag])
		}
		if round%3 == 0 {
			rg.ageSamples()
		}
		p := scrapePerTag(t, rg)
		if other(p) < other(last) {
			t.Fatalf("round %d: _other fell from %v to %v", round, other(last), other(p))
		}
		for tag, v := range p["idalloc_ids_issued_total"] {
			if old, ok := last["idalloc_ids_issued_total"][tag]; ok && v < old {
				t.Fatalf("round %d: %s fell from %v to %v", round, tag, old, v)
			}
		}
		if k := len(p["idalloc_ids_issued_total"]); k > max+1 {
			t.Fatalf("round %d: %d app_tag values, want at most %d", round, k, max+1)
		}
		last = p
	}
}

// TestTagSeriesRoom: below the cap every tag has its series and there is
// no _other; a tag created later gets one while there is room, and the
// tags past it are summed.
func TestTagSeriesRoom(t *testing.T) {
	rg := newSeriesRig(t, 5, 8)
	p := scrapePerTag(t, rg)
	if k := len(p["idalloc_segment_step"]); k != 5 {
		t.Fatalf("%d tags with series, want all 5: %v", k, p["idalloc_segment_step"])
	}
	if _, ok := p["idalloc_segment_step"][otherTag]; ok {
		t.Fatal("_other with every tag shown")
	}
	for i := range 5 {
		rg.seg.setIssued(fmt.Sprintf("new-%d", i), 100)
	}
	p = scrapePerTag(t, rg)
	if k := len(p["idalloc_segment_step"]); k != 9 {
		t.Errorf("%d app_tag values, want 8 tags and _other: %v", k, p["idalloc_segment_step"])
	}
	if got := p["idalloc_segment_ids_buffered"][otherTag]; got != 2*42 {
		t.Errorf("_other buffered = %v, want two tags' 42", got)
	}
	// The new tags issued their 100 each before this scrape saw them,
	// while none had a series: _other counts all 500. The three that got
	// one start it at 100, a new series, from which Prometheus counts no
	// increase: each ID is in one increase.
	if got := p["idalloc_ids_issued_total"][otherTag]; got != 500 {
		t.Errorf("_other issued = %v, want 500", got)
	}
}

// TestTagNamedOther: a real tag called _other is always summed under
// _other, never given a series that would repeat the sum's.
func TestTagNamedOther(t *testing.T) {
	rg := newSeriesRig(t, 3, 10)
	rg.seg.setIssued(otherTag, 5)
	p := scrapePerTag(t, rg)
	if got := p["idalloc_ids_issued_total"][otherTag]; got != 5 {
		t.Errorf("_other = %v, want the tag _other's 5", got)
	}
	if k := len(p["idalloc_ids_issued_total"]); k != 4 {
		t.Errorf("%d app_tag values, want 3 tags and _other", k)
	}
}

// TestOtherSums: _other's period_ids_left is the least left among the
// others' dated tags in a period, absent without one.
func TestOtherSums(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	dated := func(left int64, end time.Time) segment.TagStats {
		return segment.TagStats{Format: segment.FormatDated, Buffered: 1, Step: 10, Issued: 3,
			Period: segment.PeriodStats{Stamp: 20261126, End: end, Left: left}}
	}
	tomorrow := now.Add(12 * time.Hour)
	for _, c := range []struct {
		name      string
		stats     []segment.TagStats
		left      int64
		hasPeriod bool
	}{
		{"sequential only", []segment.TagStats{{Format: segment.FormatSequential, Issued: 3}}, 0, false},
		{"the least left", []segment.TagStats{dated(500, tomorrow), dated(20, tomorrow), dated(900, tomorrow)}, 20, true},
		{"an ended period is not counted", []segment.TagStats{dated(7, now), dated(30, tomorrow)}, 30, true},
	} {
		var o otherSums
		for i := range c.stats {
			o.add(&c.stats[i], now)
		}
		if o.periodLeft != c.left || o.hasPeriod != c.hasPeriod || o.tags != len(c.stats) || o.issued != 3*int64(len(c.stats)) {
			t.Errorf("%s: %+v, want period left %d (%v)", c.name, o, c.left, c.hasPeriod)
		}
	}
}

// TestPeriodLeft: the gauge's value, and when a tag has none.
func TestPeriodLeft(t *testing.T) {
	end := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	dated := segment.TagStats{Format: segment.FormatDated, Period: segment.PeriodStats{Stamp: 20261126, End: end, Left: 42}}
	for _, c := range []struct {
		name string
		st   segment.TagStats
		now  time.Time
		want int64
		ok   bool
	}{
		{"in its period", dated, end.Add(-time.Second), 42, true},
		{"its period ended", dated, end, 0, false},
		{"before its first ID", segment.TagStats{Format: segment.FormatDated}, end, 0, false},
		{"sequential", segment.TagStats{Format: segment.FormatSequential}, end, 0, false},
	} {
		if got, ok := periodLeft(&c.st, c.now); got != c.want || ok != c.ok {
			t.Errorf("%s: periodLeft = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
