package metrics

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// activity knows how busy each tag is lately: at each sample it reads
// every tag's IDs issued (Segments.AllStats) and keeps, per tag, the count
// and its rate, in IDs a second, averaged over the last rateWindow or so
// (an exponentially weighted mean over the samples, each weighing by the
// time it covers). Busiest first on the listings and the metrics' choice
// of the tags with series of their own rank tags by that rate. A sample
// is one pass over every tag, a map write each: some milliseconds at
// 100,000 tags. It is taken when one of them asks and the last is older
// than minSampleGap, so a flood of requests costs at most a pass a
// second. It also sums the IDs buffered over every tag, the figure GET
// /status heads its page with, and keeps each tag's last minutes for the
// monitor page's sparklines (history.go).
//
// It lives here, not in segment, because the metrics' choice of series
// and the listings share its one rate window: a scrape and a listing in
// the same second cost one pass, and the series shown are the tags the
// monitor page lists first.
type activity struct {
	mu  sync.Mutex
	seg Segments         // nil before Observer.Watch
	now func() time.Time // Sources.Now
	// since is when counting began (the allocator's counts start near
	// it), for the first sample's rates; at is the last sample's time.
	since, at time.Time
	// tags holds every tag seen by a sample; its keys are the
	// allocator's own strings, so they cost no copy.
	tags     map[string]tagActivity
	buffered int64
}

// tagActivity is one tag at the last sample.
type tagActivity struct {
	issued  int64   // IDs issued by this instance since it started
	rate    float64 // IDs a second, lately
	refills int64   // ranges received since it started
	// hist is its last HistoryPoints steps (history.go); nil while it
	// issued nothing and received nothing in them.
	hist *history
}

const (
	// minSampleGap is the least time between two samples.
	minSampleGap = time.Second
	// rateWindow is about how far back a rate looks: the monitor page's
	// busiest first follows a tag that turns busy within seconds and
	// does not reorder on every second's noise.
	rateWindow = 10 * time.Second
)

// watch makes a count from now on seg's tags; until then a has none.
func (a *activity) watch(seg Segments, now func() time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seg, a.now, a.since, a.tags = seg, now, now(), map[string]tagActivity{}
}

// sampleLocked takes a sample unless the last is younger than
// minSampleGap. a.mu must be held.
func (a *activity) sampleLocked() {
	if a.seg == nil {
		return // not watching yet: every tag idle
	}
	now := a.now()
	prev := a.at
	if prev.IsZero() {
		prev = a.since
	} else if now.Sub(prev) < minSampleGap {
		return
	}
	dt := max(now.Sub(prev), minSampleGap).Seconds()
	// What the rate before still weighs: the share of rateWindow the
	// sample did not cover, decaying.
	keep := math.Exp(-dt / rateWindow.Seconds())
	from := now.Add(-now.Sub(prev)) // prev on the wall clock, for the histories
	step := stepOf(now)
	a.at = now
	a.buffered = 0
	for st := range a.seg.AllStats() {
		old, seen := a.tags[st.AppTag]
		// The counts never fall; max keeps them ≥ 0 for any Segments.
		ids, refills := max(st.Issued-old.issued, 0), max(st.Refills-old.refills, 0)
		since := float64(ids) / dt
		cur := tagActivity{issued: st.Issued, rate: since + keep*(old.rate-since), refills: st.Refills, hist: old.hist}
		switch {
		case ids > 0 || refills > 0:
			if cur.hist == nil {
				cur.hist = new(history)
			}
			cur.hist.add(from, now, ids, refills)
		case cur.hist != nil && cur.hist.stale(step):
			cur.hist = nil // idle for the whole window: its ring goes
		}
		if !seen || cur != old { // else a tag never busy, or idle for hours: nothing to write
			a.tags[st.AppTag] = cur
		}
		a.buffered += st.Buffered
	}
}

// totalBuffered is the IDs buffered over every tag, at most minSampleGap
// old.
func (a *activity) totalBuffered() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sampleLocked()
	return a.buffered
}

// busy is a tag ranked by its rate.
type busy struct {
	tag  string
	rate float64
	// row is the tag's index among the rows ranked, for busiest; own
	// says the tag has series of its own, for the metrics' choice.
	row int
	own bool
}

// busier orders tags busiest first, then by name.
func busier(x, y busy) int {
	if c := cmp.Compare(y.rate, x.rate); c != 0 {
		return c
	}
	return strings.Compare(x.tag, y.tag)
}

// Rank implements segment.Ranker: rows busiest first, by the IDs each
// issued lately (ties by name), after the tag after (at its current
// rank: a tag whose rank changed between two pages may show twice or not
// at all, as in any live view), at most limit of them. It samples at
// most once per minSampleGap, then ranks every row offered, keeping the
// limit best in a heap: O(m log limit) for m rows, some milliseconds for
// 100,000 rows and a page of 100. Before Watch every tag ranks as idle.
func (o *Observer) Rank(rows []segment.Tag, after string, limit int) ([]segment.Tag, bool) {
	return o.activity.rank(rows, after, limit)
}

// TotalBuffered is the IDs buffered over every tag, at most a second old
// (minSampleGap); 0 before Watch.
func (o *Observer) TotalBuffered() int64 { return o.activity.totalBuffered() }

func (a *activity) rank(rows []segment.Tag, after string, limit int) ([]segment.Tag, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sampleLocked()
	var cursor busy
	if after != "" {
		cursor = busy{tag: after, rate: a.tags[after].rate}
	}
	top := &topK{k: limit, worse: func(x, y busy) bool { return busier(x, y) > 0 }}
	more := 0 // rows after the cursor
	for i := range rows {
		b := busy{tag: rows[i].AppTag, rate: a.tags[rows[i].AppTag].rate, row: i}
		if after != "" && busier(b, cursor) <= 0 {
			continue
		}
		more++
		top.offer(b)
	}
	ranked := top.sorted(busier)
	page := make([]segment.Tag, len(ranked))
	for i, b := range ranked {
		page[i] = rows[b.row]
	}
	return page, more > len(ranked)
}

// topK keeps the k best of the tags offered to it: a heap whose root is
// the worst kept, so an offer costs O(log k).
type topK struct {
	k     int
	worse func(x, y busy) bool // x ranks below y
	h     []busy
}

// offer keeps b if it is among the k best so far.
func (t *topK) offer(b busy) {
	switch {
	case t.k <= 0:
	case len(t.h) < t.k:
		t.h = append(t.h, b)
		for i := len(t.h) - 1; i > 0; { // up, while worse than its parent
			p := (i - 1) / 2
			if !t.worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
	case t.worse(t.h[0], b):
		t.h[0] = b
		for i := 0; ; { // down, while a child is worse
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(t.h) && t.worse(t.h[l], t.h[w]) {
				w = l
			}
			if r < len(t.h) && t.worse(t.h[r], t.h[w]) {
				w = r
			}
			if w == i {
				break
			}
			t.h[i], t.h[w] = t.h[w], t.h[i]
			i = w
		}
	}
}

// sorted returns the tags kept, best first by order.
func (t *topK) sorted(order func(x, y busy) int) []busy {
	slices.SortFunc(t.h, order)
	return t.h
}
