package server

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/frontend"
)

const namespace = "idalloc"

// Metrics is the HTTP front end's own instrument, registered on the
// registry given to NewMetrics; the domain's series are the metrics
// package's. Give each Server its own. Metric names:
//
//	idalloc_http_requests_total{route,code}
//	idalloc_http_request_duration_seconds{route}
//	idalloc_http_connections                       open, at most max_conns
//	idalloc_http_idle_connections                  of those, idle between requests
//	idalloc_http_incomplete_connections            of those, new, their request's headers incomplete
//	idalloc_http_idle_connections_closed_total     closed to make room at max_conns
//	idalloc_http_incomplete_connections_closed_total  closed so, their headers incomplete
//	idalloc_http_connections_refused_total         refused at max_conns, every one in a request
type Metrics struct {
	http  httpMetrics
	conns *frontend.Metrics // the connection cap's
}

// NewMetrics makes the HTTP metrics and registers them on reg. It fails
// only when reg already holds metrics of the same names.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{http: httpMetrics{routes: map[string]*routeMetrics{}}}
	var err error
	if m.conns, err = frontend.NewMetrics(reg, "http", "max_conns"); err != nil {
		return nil, err
	}
	if err := reg.Register(&m.http); err != nil {
		return nil, err
	}
	return m, nil
}

// The HTTP metrics are counted in shards and summed at scrape time. A
// prometheus Counter and Histogram put every request's five atomic adds on
// the same few cache lines, which made concurrent /alloc requests slower
// than a bare handler on two cores; shards picked at random keep cores
// apart, at one atomic add per counter on a line nobody else is likely to
// touch.

var (
	requestsDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "http", "requests_total"),
		"HTTP requests by route pattern and status code.", []string{"route", "code"}, nil)
	latencyDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "http", "request_duration_seconds"),
		"HTTP request latency by route pattern.", []string{"route"}, nil)
)

// latencyBounds are the histogram's upper bounds, 50µs to 3.3s doubling:
// the hot path answers from memory in microseconds, a fetch wait takes up to
// a second, and doubling keeps p99 estimates within a factor of 2.
var latencyBounds = func() [17]time.Duration {
	var b [17]time.Duration
	for i, d := 0, 50*time.Microsecond; i < len(b); i, d = i+1, d*2 {
		b[i] = d
	}
	return b
}()

// knownCodes are the statuses the server answers with, each a fixed slot.
var knownCodes = [...]string{"200", "201", "400", "401", "404", "405", "409", "500", "503"}

func codeSlot(status int) int {
	switch status {
	case 200:
		return 0
	case 201:
		return 1
	case 400:
		return 2
	case 401:
		return 3
	case 404:
		return 4
	case 405:
		return 5
	case 409:
		return 6
	case 500:
		return 7
	case 503:
		return 8
	}
	return -1
}

// httpMetrics holds every route's counts and collects them.
type httpMetrics struct {
	mu     sync.Mutex
	routes map[string]*routeMetrics
	order  []*routeMetrics
}

// routeShard is one stripe of a route's counts. The padding keeps the
// counts of neighbouring shards off each other's cache lines (128 bytes
// covers adjacent-line prefetch).
type routeShard struct {
	codes   [len(knownCodes)]atomic.Uint64
	buckets [len(latencyBounds) + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumNS   atomic.Uint64
	_       [128]byte
}

// routeMetrics counts one route pattern.
type routeMetrics struct {
	route  string
	shards []routeShard
	mask   uint32

	otherMu sync.Mutex
	other   map[int]uint64 // statuses outside knownCodes; none expected
}

// forRoute returns pattern's counts, made once per pattern so routes that
// share a label (and servers that share a Metrics) share series.
func (m *Metrics) forRoute(pattern string) *routeMetrics {
	h := &m.http
	h.mu.Lock()
	defer h.mu.Unlock()
	if rm := h.routes[pattern]; rm != nil {
		return rm
	}
	// Four shards per core make two concurrent requests on one shard rare.
	n := 1 << bits.Len(uint(4*runtime.GOMAXPROCS(0)-1))
	rm := &routeMetrics{route: pattern, shards: make([]routeShard, n), mask: uint32(n - 1)}
	h.routes[pattern] = rm
	h.order = append(h.order, rm)
	return rm
}

func (rm *routeMetrics) observe(status int, took time.Duration) {
	sh := &rm.shards[rand.Uint32()&rm.mask] // per-thread generator: no shared state
	b := 0
	for b < len(latencyBounds) && took > latencyBounds[b] {
		b++
	}
	sh.buckets[b].Add(1)
	sh.sumNS.Add(uint64(max(took, 0)))
	if i := codeSlot(status); i >= 0 {
		sh.codes[i].Add(1)
		return
	}
	rm.otherMu.Lock()
	defer rm.otherMu.Unlock()
	if rm.other == nil {
		rm.other = map[int]uint64{}
	}
	rm.other[status]++
}

func (h *httpMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- latencyDesc
}

// Collect sums the shards. Counts read while requests run may be a request
// apart between the two metrics; each alone only grows.
func (h *httpMetrics) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	routes := h.order[:len(h.order):len(h.order)]
	h.mu.Unlock()
	for _, rm := range routes {
		var codes [len(knownCodes)]uint64
		var perBucket [len(latencyBounds) + 1]uint64
		var sumNS uint64
		for i := range rm.shards {
			sh := &rm.shards[i]
			for c := range codes {
				codes[c] += sh.codes[c].Load()
			}
			for b := range perBucket {
				perBucket[b] += sh.buckets[b].Load()
			}
			sumNS += sh.sumNS.Load()
		}
		for c, n := range codes {
			if n > 0 {
				ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), rm.route, knownCodes[c])
			}
		}
		rm.otherMu.Lock()
		for status, n := range rm.other {
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), rm.route, strconv.Itoa(status))
		}
		rm.otherMu.Unlock()

		cumulative := make(map[float64]uint64, len(latencyBounds))
		var count uint64
		for b, bound := range latencyBounds {
			count += perBucket[b]
			cumulative[bound.Seconds()] = count
		}
		count += perBucket[len(latencyBounds)]
		ch <- prometheus.MustNewConstHistogram(latencyDesc, count, time.Duration(sumNS).Seconds(), cumulative, rm.route)
	}
}
