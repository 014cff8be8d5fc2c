package server

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
)

const namespace = "idalloc"

// Metrics holds idalloc's metrics, registered on the registry given to
// NewMetrics. It is the segment allocator's Observer (pass it as
// segment.Config.Observer), the snowflake generators' Observer (pass it as
// snowflake.Settings.Observer), and the server's own instrument.
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
// Metric names:
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
//	idalloc_http_requests_total{route,code}
//	idalloc_http_request_duration_seconds{route}
//	idalloc_http_connections                       open, at most max_conns
//	idalloc_http_idle_connections                  of those, idle between requests
//	idalloc_http_incomplete_connections            of those, new, their request's headers incomplete
//	idalloc_http_idle_connections_closed_total     closed to make room at max_conns
//	idalloc_http_incomplete_connections_closed_total  closed so, their headers incomplete
//	idalloc_http_connections_refused_total         refused at max_conns, every one in a request
type Metrics struct {
	fetches       prometheus.Counter
	fetchErrors   prometheus.Counter
	fetchTimeouts prometheus.Counter
	refused       prometheus.Counter
	conflicts     *prometheus.CounterVec
	fetchDuration prometheus.Histogram
	givenBack     prometheus.Counter
	wasted        *prometheus.CounterVec

	driftWaited, driftTryLater, driftTooLarge prometheus.Counter
	// drift mirrors the three drift counters for the status endpoint,
	// which reads them per request: an atomic load, not a protobuf Write.
	drift struct{ waited, tryLater, tooLarge atomic.Int64 }

	http  httpMetrics
	conns *frontend.Metrics // the connection cap's

	snowflakeIssued atomic.Int64
	sources         atomic.Pointer[sources]
}

var (
	_ segment.Observer   = (*Metrics)(nil)
	_ snowflake.Observer = (*Metrics)(nil)
)

// sources are what the scrape-time collector reads; the server sets them
// once it has its dependencies, which are made after the Metrics (the
// allocator needs the Metrics as its Observer).
type sources struct {
	segments  Segments
	activity  *activity
	series    *tagSeries
	snowflake bool
	own       OwnLease
}

// NewMetrics makes the metrics and registers them on reg. It fails only when
// reg already holds metrics of the same names.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "segment", Name: name, Help: help,
		})
	}
	m := &Metrics{
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
		http: httpMetrics{routes: map[string]*routeMetrics{}},
	}
	for _, why := range segment.WasteReasons() {
		m.wasted.WithLabelValues(string(why)) // exists at 0 from the start, for rate()
	}
	drift := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "snowflake", Name: "clock_drift_events_total",
		Help: "Clock-drift events of the snowflake generator by outcome: waited, try_later, too_large.",
	}, []string{"outcome"})
	m.driftWaited = drift.WithLabelValues(string(snowflake.DriftWaited))
	m.driftTryLater = drift.WithLabelValues(string(snowflake.DriftTryLater))
	m.driftTooLarge = drift.WithLabelValues(string(snowflake.DriftTooLarge))

	var err error
	if m.conns, err = frontend.NewMetrics(reg, "http", "max_conns"); err != nil {
		return nil, err
	}
	for _, c := range []prometheus.Collector{
		m.fetches, m.fetchErrors, m.fetchTimeouts, m.refused, m.conflicts, m.fetchDuration,
		m.givenBack, m.wasted, drift, stateCollector{m}, &m.http,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
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

// watch points the scrape-time collector at the server's dependencies,
// with at most maxTagSeries tags having series of their own.
func (m *Metrics) watch(seg Segments, act *activity, maxTagSeries int, snowflake bool, own OwnLease) {
	m.sources.Store(&sources{segments: seg, activity: act, series: &tagSeries{max: maxTagSeries},
		snowflake: snowflake, own: own})
}

// Fetched implements segment.Observer. A fetch of a tag the store no longer
// has is not counted: it says nothing about the store's health.
func (m *Metrics) Fetched(_ string, took time.Duration, err error) {
	if errors.Is(err, segment.ErrUnknownTag) {
		return
	}
	m.fetches.Inc()
	m.fetchDuration.Observe(took.Seconds())
	if err == nil {
		return
	}
	m.fetchErrors.Inc()
	if errors.Is(err, segment.ErrFetchTimedOut) {
		m.fetchTimeouts.Inc()
	}
	if errors.Is(err, segment.ErrRewound) {
		m.refused.Inc()
	}
}

// StoreConflict counts a lost race of op; wire it to the store's
// ObserveConflicts. op comes from the store, never from a request.
func (m *Metrics) StoreConflict(op string) { m.conflicts.WithLabelValues(op).Inc() }

// Issued implements snowflake.Observer: the generator reports every ID it
// issues, whichever front end asked, for
// idalloc_ids_issued_total{mode="snowflake"}.
func (m *Metrics) Issued(n int) { m.snowflakeIssued.Add(int64(n)) }

// Drift implements snowflake.Observer: each wait and each refusal, for
// idalloc_snowflake_clock_drift_events_total.
func (m *Metrics) Drift(outcome snowflake.DriftOutcome, _ time.Duration) {
	switch outcome {
	case snowflake.DriftWaited:
		m.driftWaited.Inc()
		m.drift.waited.Add(1)
	case snowflake.DriftTryLater:
		m.driftTryLater.Inc()
		m.drift.tryLater.Add(1)
	case snowflake.DriftTooLarge:
		m.driftTooLarge.Inc()
		m.drift.tooLarge.Add(1)
	}
}

// GaveBack implements segment.Observer.
func (m *Metrics) GaveBack(_ string, n int64) { m.givenBack.Add(float64(n)) }

// Wasted implements segment.Observer. why is one of segment.WasteReasons,
// never request input.
func (m *Metrics) Wasted(_ string, n int64, why segment.WasteReason) {
	m.wasted.WithLabelValues(string(why)).Add(float64(n))
}

// stateCollector reads per-tag and lease values at scrape time, so the ID
// hot path pays nothing for them.
type stateCollector struct{ m *Metrics }

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
	src := c.m.sources.Load()
	if src == nil {
		return
	}
	src.series.collect(ch, src.segments, src.activity, time.Now())
	if src.snowflake {
		ch <- prometheus.MustNewConstMetric(issuedDesc, prometheus.CounterValue, float64(c.m.snowflakeIssued.Load()), "snowflake", "")
	}
	if src.own != nil {
		ch <- prometheus.MustNewConstMetric(leaseLeftDesc, prometheus.GaugeValue, src.own.SecondsLeft(time.Now()))
		if l, ok := src.own.Lease(); ok {
			ch <- prometheus.MustNewConstMetric(leaseInfoDesc, prometheus.GaugeValue, 1, l.Cluster, strconv.FormatInt(l.WorkerID, 10))
		}
	}
}
