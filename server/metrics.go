package server

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/segment"
)

const namespace = "idalloc"

// Metrics holds idalloc's metrics, registered on the registry given to
// NewMetrics. It is the segment allocator's Observer (pass it as
// segment.Config.Observer) and the server's own instrument. Per-tag series
// exist only for tags of the store: per-ID values are read from the
// allocator's Stats at scrape time, and fetch events come from the allocator,
// which only fetches tags it knows.
//
// Metric names:
//
//	idalloc_ids_issued_total{mode="segment",app_tag} / {mode="snowflake"}
//	idalloc_segment_fetches_total{app_tag}          fetch attempts, failed ones included
//	idalloc_segment_fetch_errors_total{app_tag}
//	idalloc_segment_ranges_refused_total{app_tag}   fetched ranges at or below one received before
//	idalloc_store_conflicts_total{op}               lost races retried at once (fetch, acquire, …)
//	idalloc_segment_fetch_duration_seconds{app_tag}
//	idalloc_segment_ids_buffered{app_tag}
//	idalloc_segment_step{app_tag}                   current adaptive step
//	idalloc_segment_ids_given_back_total{app_tag}
//	idalloc_segment_ids_wasted_total{app_tag}
//	idalloc_snowflake_clock_drift_events_total{outcome="waited|try_later|too_large"}
//	idalloc_workerlease_seconds_left                this instance's own lease
//	idalloc_workerlease_worker_id
//	idalloc_http_requests_total{route,code}
//	idalloc_http_request_duration_seconds{route}
type Metrics struct {
	fetches       *prometheus.CounterVec
	fetchErrors   *prometheus.CounterVec
	refused       *prometheus.CounterVec
	conflicts     *prometheus.CounterVec
	fetchDuration *prometheus.HistogramVec
	givenBack     *prometheus.CounterVec
	wasted        *prometheus.CounterVec

	driftWaited, driftTryLater, driftTooLarge prometheus.Counter

	http httpMetrics

	snowflakeIssued atomic.Int64
	sources         atomic.Pointer[sources]
}

var _ segment.Observer = (*Metrics)(nil)

// sources are what the scrape-time collector reads; the server sets them
// once it has its dependencies, which are made after the Metrics (the
// allocator needs the Metrics as its Observer).
type sources struct {
	segments  Segments
	snowflake bool
	own       OwnLease
}

// NewMetrics makes the metrics and registers them on reg. It fails only when
// reg already holds metrics of the same names.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	tagged := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "segment", Name: name, Help: help,
		}, []string{"app_tag"})
	}
	m := &Metrics{
		fetches:     tagged("fetches_total", "Segment fetches from the store, failed ones included."),
		fetchErrors: tagged("fetch_errors_total", "Segment fetches that failed."),
		refused: tagged("ranges_refused_total",
			"Fetched ranges refused because they did not start above every range this instance had received (a store rewound by a failover)."),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "store", Name: "conflicts_total",
			Help: "Lost races with another writer of the same row, retried at once, by operation.",
		}, []string{"op"}),
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "segment", Name: "fetch_duration_seconds",
			Help: "Duration of segment fetches from the store.",
			// 0.5ms to 3.3s: a local SQLite fetch up to the fetch timeout.
			Buckets: prometheus.ExponentialBuckets(0.0005, 3, 9),
		}, []string{"app_tag"}),
		givenBack: tagged("ids_given_back_total", "Unused IDs handed back to the store on a graceful stop."),
		wasted:    tagged("ids_wasted_total", "Unused IDs that could not be handed back."),
		http:      httpMetrics{routes: map[string]*routeMetrics{}},
	}
	drift := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "snowflake", Name: "clock_drift_events_total",
		Help: "Clock-drift events of the snowflake generator by outcome: waited, try_later, too_large.",
	}, []string{"outcome"})
	m.driftWaited = drift.WithLabelValues("waited")
	m.driftTryLater = drift.WithLabelValues("try_later")
	m.driftTooLarge = drift.WithLabelValues("too_large")

	for _, c := range []prometheus.Collector{
		m.fetches, m.fetchErrors, m.refused, m.conflicts, m.fetchDuration, m.givenBack, m.wasted, drift,
		stateCollector{m}, &m.http,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// watch points the scrape-time collector at the server's dependencies.
func (m *Metrics) watch(seg Segments, snowflake bool, own OwnLease) {
	m.sources.Store(&sources{segments: seg, snowflake: snowflake, own: own})
}

// Fetched implements segment.Observer. A fetch of a tag the store does not
// have creates no series.
func (m *Metrics) Fetched(tag string, took time.Duration, err error) {
	if !segment.ValidTag(tag) || errors.Is(err, segment.ErrUnknownTag) {
		return
	}
	m.fetches.WithLabelValues(tag).Inc()
	m.fetchDuration.WithLabelValues(tag).Observe(took.Seconds())
	// Resolved on success too, so the error series exists at 0 for rate().
	errs := m.fetchErrors.WithLabelValues(tag)
	refused := m.refused.WithLabelValues(tag)
	if err != nil {
		errs.Inc()
	}
	if errors.Is(err, segment.ErrRewound) {
		refused.Inc()
	}
}

// StoreConflict counts a lost race of op; wire it to the store's
// ObserveConflicts. op comes from the store, never from a request.
func (m *Metrics) StoreConflict(op string) { m.conflicts.WithLabelValues(op).Inc() }

// DriftWaited counts a clock drift the snowflake generator waited out; wire
// it to snowflake.Settings.OnDriftWait.
func (m *Metrics) DriftWaited(time.Duration) { m.driftWaited.Inc() }

// GaveBack implements segment.Observer.
func (m *Metrics) GaveBack(tag string, n int64) {
	if segment.ValidTag(tag) {
		m.givenBack.WithLabelValues(tag).Add(float64(n))
	}
}

// Wasted implements segment.Observer.
func (m *Metrics) Wasted(tag string, n int64) {
	if segment.ValidTag(tag) {
		m.wasted.WithLabelValues(tag).Add(float64(n))
	}
}

// stateCollector reads per-tag and lease values at scrape time, so the ID
// hot path pays nothing for them.
type stateCollector struct{ m *Metrics }

var (
	issuedDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "ids_issued_total"),
		"IDs issued by this instance since it started, by mode and, for segments, app_tag.",
		[]string{"mode", "app_tag"}, nil)
	bufferedDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "segment", "ids_buffered"),
		"IDs buffered in memory: the current segment's remainder plus the prefetched one.",
		[]string{"app_tag"}, nil)
	stepDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "segment", "step"),
		"Current adaptive step (0 before the first fetch).",
		[]string{"app_tag"}, nil)
	leaseLeftDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "workerlease", "seconds_left"),
		"Seconds this instance's worker lease is provably held for; 0 without a lease.",
		nil, nil)
	leaseWorkerDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "workerlease", "worker_id"),
		"Worker ID this instance holds; absent without a lease.",
		nil, nil)
)

func (stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{issuedDesc, bufferedDesc, stepDesc, leaseLeftDesc, leaseWorkerDesc} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.sources.Load()
	if src == nil {
		return
	}
	for _, st := range src.segments.Stats() {
		if !segment.ValidTag(st.AppTag) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(issuedDesc, prometheus.CounterValue, float64(st.Issued), "segment", st.AppTag)
		ch <- prometheus.MustNewConstMetric(bufferedDesc, prometheus.GaugeValue, float64(st.Buffered), st.AppTag)
		ch <- prometheus.MustNewConstMetric(stepDesc, prometheus.GaugeValue, float64(st.Step), st.AppTag)
	}
	if src.snowflake {
		ch <- prometheus.MustNewConstMetric(issuedDesc, prometheus.CounterValue, float64(c.m.snowflakeIssued.Load()), "snowflake", "")
	}
	if src.own != nil {
		ch <- prometheus.MustNewConstMetric(leaseLeftDesc, prometheus.GaugeValue, src.own.SecondsLeft(time.Now()))
		if l, ok := src.own.Lease(); ok {
			ch <- prometheus.MustNewConstMetric(leaseWorkerDesc, prometheus.GaugeValue, float64(l.WorkerID))
		}
	}
}
