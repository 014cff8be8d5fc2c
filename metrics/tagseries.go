package metrics

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/segment"
)

// Per-tag series are capped (docs/api.md §13): at most maxSeries tags have
// series of their own, the busiest, and every other tag is summed under
// app_tag="_other", so a scrape has at most maxSeries+1 app_tag values
// per metric whatever the tag count. An instance with no more tags than
// the cap shows every tag and no _other.
//
// The set is chosen again at the first scrape a minute (seriesRechoice)
// or more after the last choice, by each tag's rate of IDs lately
// (activity; over the minute since the last choice when nothing else
// sampled meanwhile): the busiest first, a tag that has its series
// keeping it over an equally busy one, so an idle instance never swaps
// series. Between choices a tag new to the instance gets a series while
// the set has room.
//
// Counters stay counters. A tag's own ids_issued_total is its count since
// the instance started, which never falls; when the tag leaves the set
// its series ends, and when it comes back it starts again from that
// count, which Prometheus reads as a new series, not a reset. _other's
// ids_issued_total counts the IDs each tag issued while it had no series
// of its own: it is the others' counts plus an offset, and whenever a
// tag joins or leaves the set in a scrape, the offset takes in the count
// that tag had then (read in that scrape's pass, like every value shown),
// so the sum neither jumps nor falls; a last guard keeps it from ever
// showing less than it showed before. Its rate is then exactly the IDs
// issued by tags without their own series.
//
// _other's gauges are the others' IDs buffered and current steps summed
// (step > 0: some of them has fetched), and for period_ids_left the least
// left among the others' dated tags: a sum of them would hide the one
// that runs out.

// otherTag is the app_tag the tags without series of their own are
// summed under. A tag of that name is always among them: its own series
// would be the sum's.
const otherTag = "_other"

// seriesRechoice is how often the set is chosen again: every series a
// Prometheus has seen costs it memory until its head block is compacted
// (two hours), so a set that moved at every scrape would multiply what it
// holds.
const seriesRechoice = time.Minute

// tagSeries is which tags have series of their own, and _other's counter.
// A scrape holds mu for its pass over every tag.
type tagSeries struct {
	max int
	mu  sync.Mutex
	at  time.Time           // of the last choice; zero before the first
	own map[string]struct{} // at most max tags
	// offset and shown make _other's ids_issued_total (see above).
	offset, shown int64
}

// otherSums are the figures of the tags without series of their own.
type otherSums struct {
	tags                   int
	issued, buffered, step int64
	periodLeft             int64
	hasPeriod              bool
}

// collect sends the per-tag series of every tag of seg, and _other's, and
// the count of tags. It is one pass over the tags, reading each once.
func (ts *tagSeries) collect(ch chan<- prometheus.Metric, seg Segments, act *activity, now time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	first := ts.at.IsZero()
	next := ts.own
	if first || now.Sub(ts.at) >= seriesRechoice {
		next = ts.choose(act)
		ts.at = now
	}
	var o otherSums
	n := 0
	for st := range seg.AllStats() {
		n++
		if !segment.ValidTag(st.AppTag) {
			continue // never a label
		}
		_, was := ts.own[st.AppTag]
		_, is := next[st.AppTag]
		if !is && len(next) < ts.max && st.AppTag != otherTag {
			next[st.AppTag] = struct{}{} // room, for a tag new here
			is = true
		}
		switch {
		case first:
		case was && !is: // from here on among the others, from its count now
			ts.offset -= st.Issued
		case !was && is: // what it issued among the others stays theirs
			ts.offset += st.Issued
		}
		if is {
			sendTag(ch, &st, st.AppTag, now)
			continue
		}
		o.add(&st, now)
	}
	ts.own = next
	ch <- prometheus.MustNewConstMetric(tagsDesc, prometheus.GaugeValue, float64(n))
	if o.tags == 0 {
		return
	}
	ts.shown = max(ts.shown, o.issued+ts.offset)
	ch <- prometheus.MustNewConstMetric(issuedDesc, prometheus.CounterValue, float64(ts.shown), "segment", otherTag)
	ch <- prometheus.MustNewConstMetric(bufferedDesc, prometheus.GaugeValue, float64(o.buffered), otherTag)
	ch <- prometheus.MustNewConstMetric(stepDesc, prometheus.GaugeValue, float64(o.step), otherTag)
	if o.hasPeriod {
		ch <- prometheus.MustNewConstMetric(periodLeftDesc, prometheus.GaugeValue, float64(o.periodLeft), otherTag)
	}
}

// sendTag sends st's own series under label.
func sendTag(ch chan<- prometheus.Metric, st *segment.TagStats, label string, now time.Time) {
	ch <- prometheus.MustNewConstMetric(issuedDesc, prometheus.CounterValue, float64(st.Issued), "segment", label)
	ch <- prometheus.MustNewConstMetric(bufferedDesc, prometheus.GaugeValue, float64(st.Buffered), label)
	ch <- prometheus.MustNewConstMetric(stepDesc, prometheus.GaugeValue, float64(st.Step), label)
	if left, ok := periodLeft(st, now); ok {
		ch <- prometheus.MustNewConstMetric(periodLeftDesc, prometheus.GaugeValue, float64(left), label)
	}
}

func (o *otherSums) add(st *segment.TagStats, now time.Time) {
	o.tags++
	o.issued += st.Issued
	o.buffered += st.Buffered
	o.step += st.Step
	if left, ok := periodLeft(st, now); ok && (!o.hasPeriod || left < o.periodLeft) {
		o.periodLeft, o.hasPeriod = left, true
	}
}

// choose returns the max busiest tags by the activity's rates (sampled
// now unless the last sample is under minSampleGap old), a tag of the
// current set first among equally busy ones, then by name. It ranks every
// tag in a heap of max: O(n log max) for n tags.
func (ts *tagSeries) choose(act *activity) map[string]struct{} {
	act.mu.Lock()
	defer act.mu.Unlock()
	act.sampleLocked()
	top := &topK{k: ts.max, worse: func(x, y busy) bool {
		if x.rate != y.rate {
			return x.rate < y.rate
		}
		if x.own != y.own {
			return y.own
		}
		return strings.Compare(x.tag, y.tag) > 0
	}}
	for tag, a := range act.tags {
		if tag == otherTag || !segment.ValidTag(tag) {
			continue
		}
		_, own := ts.own[tag]
		top.offer(busy{tag: tag, rate: a.rate, own: own})
	}
	next := make(map[string]struct{}, ts.max)
	for _, b := range top.h {
		next[b.tag] = struct{}{}
	}
	return next
}

// periodLeft is what the period_ids_left gauge shows of a dated tag's
// stats: its current period's numbers left, false for another tag, before
// its first ID, and once its period has ended (the next period's count
// is not known before its first fetch, and the ended one's would alarm
// for nothing).
func periodLeft(st *segment.TagStats, now time.Time) (int64, bool) {
	if st.Format != segment.FormatDated || st.Period.Stamp == 0 || !now.Before(st.Period.End) {
		return 0, false
	}
	return st.Period.Left, true
}
