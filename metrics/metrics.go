// Package metrics shows the domain's observers as Prometheus series: the
// segment allocator's fetches, give-backs and waste, the snowflake
// generators' IDs and clock drifts, the store's lost races, the worker
// lease, and per tag the IDs issued, buffered and the current step, at
// most max_tag_series tags with series of their own (docs/api.md §13).
// It also ranks tags busiest first, by the rate of IDs they issued
// lately, for every front end's listings, and keeps each tag's last five
// minutes (History) for the monitor page. Metric names, labels and help
// texts are the contract's; the front ends count their own wire.
package metrics

import (
	"errors"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// namespace is every idalloc metric's first word.
const namespace = "idalloc"

// Observer holds the domain's metrics, registered on the registry given
// to New. It is the segment allocator's Observer (pass it as
// segment.Config.Observer), the snowflake generators' Observer (pass it as
// snowflake.Settings.Observer) and the store's conflict counter
// (StoreConflict); once Watch has pointed it at the allocator, it reads
// the per-tag and lease values at scrape time and ranks the tags for the
// listings (Rank).
//
// Only what an operator reads per tag carries app_tag: IDs issued, IDs
// buffered and the current step, read from the allocator's stats at scrape
// time, so they exist from the start for the tags of the store, cost the ID
// hot path nothing, and never exist for a tag the store lacks. At most
// max_tag_series tags have them, the busiest; the rest are summed under
// app_tag="_other" (tagseries.go), so a scrape's size does not grow with
// the tag count. A dated tag
// (docs/api.md §11) adds one: what is left of its current period, the one
// figure that warns before its numbers run out, which is an outage of the
// tag until the next period; only dated tags have it, from their first ID
// on this instance until their period ends. Everything
// else is per instance: with thousands of tags a per-tag fetch histogram
// alone would be most of the scrape. The logs name the tag of a failing
// fetch, and GET /tags shows each tag's IDs given back and wasted.
//
// Metric names (the front ends add their own: idalloc_http_*, idalloc_resp_*):
//
//	idalloc_ids_issued_total{mode="segment",app_tag} / {mode="snowflake"}
//	idalloc_segment_ids_buffered{app_tag}
//	idalloc_segment_step{app_tag}                  current adaptive step
//	idalloc_segment_period_ids_left{app_tag}       a dated tag's numbers left in its current period
//	idalloc_segment_tags                           tags this instance serves
//	idalloc_segment_fetches_total                  fetch attempts, failed ones included
//	idalloc_segment_fetch_errors_total
//	idalloc_segment_fetch_timeouts_total           failed after the deadline: may have reserved a range
//	idalloc_segment_ranges_refused_total           fetched ranges at or below one received before
//	idalloc_segment_fetch_duration_seconds         histogram
//	idalloc_segment_ids_given_back_total           handed back on a graceful stop
//	idalloc_segment_ids_wasted_total{reason}       reserved and never to be issued (segment.WasteReason)
//	idalloc_store_conflicts_total{op}              lost races retried at once (fetch, acquire, …)
//	idalloc_snowflake_clock_drift_events_total{outcome="waited|try_later|too_large"}
//	idalloc_workerlease_left_seconds               this instance's own lease; 0 without one
//	idalloc_workerlease_info{cluster,worker_id}    1 while it holds a lease
type Observer struct {
	fetches       prometheus.Counter
	fetchErrors   prometheus.Counter
	fetchTimeouts prometheus.Counter
	refused       prometheus.Counter
	conflicts     *prometheus.CounterVec
	fetchDuration prometheus.Histogram
	givenBack     prometheus.Counter
	wasted        *prometheus.CounterVec

	driftWaited, driftTryLater, driftTooLarge prometheus.Counter
	// drift mirrors the three drift counters for GET /status, which
	// reads them per request: an atomic load, not a protobuf Write.
	drift struct{ waited, tryLater, tooLarge atomic.Int64 }

	snowflakeIssued atomic.Int64
	// activity ranks the tags by the IDs they issued lately, for the
	// listings' busiest first and the choice of per-tag series.
	activity activity
	sources  atomic.Pointer[sources]
}

var (
	_ segment.Observer   = (*Observer)(nil)
	_ snowflake.Observer = (*Observer)(nil)
	_ segment.Ranker     = (*Observer)(nil)
)

// Segments is what the metrics read of segment.Allocator: every tag's
// figures, one at a time, without asking the store.
type Segments interface {
	AllStats() iter.Seq[segment.TagStats]
}

// Lease is what the metrics read of workerlease.Keeper: this instance's
// own lease.
type Lease interface {
	Lease() (workerlease.Lease, bool)
	SecondsLeft(now time.Time) float64
}

// DefaultMaxTagSeries is Sources.MaxTagSeries when it is 0: the tags with
// series of their own (metrics.max_tag_series).
const DefaultMaxTagSeries = 1000

// Sources are what an Observer reads at scrape time and ranks tags by.
type Sources struct {
	// Segments is the allocator; required.
	Segments Segments
	// MaxTagSeries caps the tags with per-tag series of their own
	// (metrics.max_tag_series); the others are summed under
	// app_tag="_other". 0 means DefaultMaxTagSeries.
	MaxTagSeries int
	// Snowflake says snowflake mode is on: idalloc_ids_issued_total
	// then has its mode="snowflake" series.
	Snowflake bool
	// Lease is this instance's own worker lease, for the lease metrics;
	// nil without snowflake mode.
	Lease Lease
	// Now is the clock rates and scrapes are read by; nil means
	// time.Now.
	Now func() time.Time
}

// sources are what the scrape-time collector reads; Watch sets them once
// the allocator exists, which is made after the Observer (it needs the
// Observer).
type sources struct {
	seg       Segments
	series    *tagSeries
	snowflake bool
	lease     Lease
	now       func() time.Time
}

// New makes the metrics and registers them on reg. It fails only when
// reg already holds metrics of the same names.
func New(reg prometheus.Registerer) (*Observer, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "segment", Name: name, Help: help,
		})
	}
	o := &Observer{
		fetches:     counter("fetches_total", "Segment fetches from the store, failed ones included."),
		fetchErrors: counter("fetch_errors_total", "Segment fetches that failed (the log names the tag)."),
		fetchTimeouts: counter("fetch_timeouts_total",
			"Segment fetches that failed after their deadline. The store may have reserved such a fetch's range all the same; it is never used, so each may leave a gap of up to one step, not counted in ids_wasted_total."),
		refused: counter("ranges_refused_total",
			"Fetched ranges refused because they did not start above every range this instance had received (a store rewound by a failover)."),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "store", Name: "conflicts_total",
			Help: "Lost races with another writer of the same row, retried at once, by operation.",
		}, []string{"op"}),
		fetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "segment", Name: "fetch_duration_seconds",
			Help: "Duration of segment fetches from the store, every tag together.",
			// 0.5ms to 3.3s: a local SQLite fetch up to the fetch timeout.
			Buckets: prometheus.ExponentialBuckets(0.0005, 3, 9),
		}),
		givenBack: counter("ids_given_back_total", "Unused IDs handed back to the store on a graceful stop."),
		wasted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "segment", Name: "ids_wasted_total",
			Help: "IDs this instance reserved and will never issue (a gap, never a duplicate), counted when it learns of them, by reason: " + wasteReasons() + ".",
		}, []string{"reason"}),
	}
	for _, why := range segment.WasteReasons() {
		o.wasted.WithLabelValues(string(why)) // exists at 0 from the start, for rate()
	}
	drift := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "snowflake", Name: "clock_drift_events_total",
		Help: "Clock-drift events of the snowflake generator by outcome: waited, try_later, too_large.",
	}, []string{"outcome"})
	o.driftWaited = drift.WithLabelValues(string(snowflake.DriftWaited))
	o.driftTryLater = drift.WithLabelValues(string(snowflake.DriftTryLater))
	o.driftTooLarge = drift.WithLabelValues(string(snowflake.DriftTooLarge))

	for _, c := range []prometheus.Collector{
		o.fetches, o.fetchErrors, o.fetchTimeouts, o.refused, o.conflicts, o.fetchDuration,
		o.givenBack, o.wasted, drift, stateCollector{o},
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// wasteReasons lists segment.WasteReasons for the help text, which so
// names every reason there is (period_ended: a dated tag's numbers of a
// period that ended before they were issued).
func wasteReasons() string {
	var b strings.Builder
	for i, why := range segment.WasteReasons() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(why))
	}
	return b.String()
}

// Watch points the scrape-time collector and the ranking at src; call it
// once. Until then a scrape has no per-tag, snowflake-issued or lease
// series, and Rank and TotalBuffered see no tag busy. It fails on a nil
// Segments or a negative MaxTagSeries.
func (o *Observer) Watch(src Sources) error {
	if src.Segments == nil {
		return errors.New("metrics: Sources.Segments is required")
	}
	if src.MaxTagSeries < 0 {
		return errors.New("metrics: Sources.MaxTagSeries must not be negative")
	}
	if src.Now == nil {
		src.Now = time.Now
	}
	if src.MaxTagSeries == 0 {
		src.MaxTagSeries = DefaultMaxTagSeries
	}
	o.activity.watch(src.Segments, src.Now)
	o.sources.Store(&sources{seg: src.Segments, series: &tagSeries{max: src.MaxTagSeries},
		snowflake: src.Snowflake, lease: src.Lease, now: src.Now})
	return nil
}

// Fetched implements segment.Observer. A fetch of a tag the store no longer
// has is not counted: it says nothing about the store's health.
func (o *Observer) Fetched(_ string, took time.Duration, err error) {
	if errors.Is(err, segment.ErrUnknownTag) {
		return
	}
	o.fetches.Inc()
	o.fetchDuration.Observe(took.Seconds())
	if err == nil {
		return
	}
	o.fetchErrors.Inc()
	if errors.Is(err, segment.ErrFetchTimedOut) {
		o.fetchTimeouts.Inc()
	}
	if errors.Is(err, segment.ErrRewound) {
		o.refused.Inc()
	}
}

// StoreConflict counts a lost race of op; wire it to the store's
// ObserveConflicts. op comes from the store, never from a request.
func (o *Observer) StoreConflict(op string) { o.conflicts.WithLabelValues(op).Inc() }

// Issued implements snowflake.Observer: the generator reports every ID it
// issues, whichever front end asked, for
// idalloc_ids_issued_total{mode="snowflake"}.
func (o *Observer) Issued(n int) { o.snowflakeIssued.Add(int64(n)) }

// Drift implements snowflake.Observer: each wait and each refusal, for
// idalloc_snowflake_clock_drift_events_total.
func (o *Observer) Drift(outcome snowflake.DriftOutcome, _ time.Duration) {
	switch outcome {
	case snowflake.DriftWaited:
		o.driftWaited.Inc()
		o.drift.waited.Add(1)
	case snowflake.DriftTryLater:
		o.driftTryLater.Inc()
		o.drift.tryLater.Add(1)
	case snowflake.DriftTooLarge:
		o.driftTooLarge.Inc()
		o.drift.tooLarge.Add(1)
	}
}

// GaveBack implements segment.Observer.
func (o *Observer) GaveBack(_ string, n int64) { o.givenBack.Add(float64(n)) }

// Wasted implements segment.Observer. why is one of segment.WasteReasons,
// never request input.
func (o *Observer) Wasted(_ string, n int64, why segment.WasteReason) {
	o.wasted.WithLabelValues(string(why)).Add(float64(n))
}

// SnowflakeIssued is the snowflake IDs issued since the start, as
// idalloc_ids_issued_total{mode="snowflake"} counts them.
func (o *Observer) SnowflakeIssued() int64 { return o.snowflakeIssued.Load() }

// DriftEvents are the clock-drift events by outcome, as
// idalloc_snowflake_clock_drift_events_total counts them.
type DriftEvents struct{ Waited, TryLater, TooLarge int64 }

// DriftEvents returns the clock-drift events since the start.
func (o *Observer) DriftEvents() DriftEvents {
	return DriftEvents{o.drift.waited.Load(), o.drift.tryLater.Load(), o.drift.tooLarge.Load()}
}

// stateCollector reads per-tag and lease values at scrape time, so the ID
// hot path pays nothing for them.
type stateCollector struct{ o *Observer }

var (
	issuedDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "ids_issued_total"),
		"IDs issued by this instance since it started, by mode and, for segments, app_tag; "+
			`app_tag="_other" counts the IDs tags issued while they had no series of their own (metrics.max_tag_series).`,
		[]string{"mode", "app_tag"}, nil)
	bufferedDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "segment", "ids_buffered"),
		`IDs buffered in memory: the current segment's remainder plus the prefetched one; app_tag="_other" sums the tags without series of their own.`,
		[]string{"app_tag"}, nil)
	stepDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "segment", "step"),
		`Current adaptive step (0 before the first fetch); app_tag="_other" sums the tags without series of their own.`,
		[]string{"app_tag"}, nil)
	periodLeftDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "segment", "period_ids_left"),
		"A dated tag's numbers left in its current period, across instances as far as this one knows at its last fetch; "+
			"absent for other tags, before a dated tag's first ID here and once its period has ended; "+
			`app_tag="_other" is the least left among the dated tags without series of their own.`,
		[]string{"app_tag"}, nil)
	tagsDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "segment", "tags"),
		"Tags this instance serves: every tag it has seen in the store since it started.",
		nil, nil)
	leaseLeftDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "workerlease", "left_seconds"),
		"Seconds this instance's worker lease is provably held for; 0 without a lease.",
		nil, nil)
	leaseInfoDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "workerlease", "info"),
		"The worker lease this instance holds, as labels: cluster and worker_id. Absent without a lease.",
		[]string{"cluster", "worker_id"}, nil)
)

func (stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{issuedDesc, bufferedDesc, stepDesc, periodLeftDesc, tagsDesc, leaseLeftDesc, leaseInfoDesc} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.o.sources.Load()
	if src == nil {
		return
	}
	src.series.collect(ch, src.seg, &c.o.activity, src.now())
	if src.snowflake {
		ch <- prometheus.MustNewConstMetric(issuedDesc, prometheus.CounterValue, float64(c.o.snowflakeIssued.Load()), "snowflake", "")
	}
	if src.lease != nil {
		ch <- prometheus.MustNewConstMetric(leaseLeftDesc, prometheus.GaugeValue, src.lease.SecondsLeft(src.now()))
		if l, ok := src.lease.Lease(); ok {
			ch <- prometheus.MustNewConstMetric(leaseInfoDesc, prometheus.GaugeValue, 1, l.Cluster, strconv.FormatInt(l.WorkerID, 10))
		}
	}
}
