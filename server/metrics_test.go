package server

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
)

// TestMetricsScrape drives every metric once, scrapes /metrics, and checks
// the series exist while unknown and invalid tags, and raw paths, made none.
func TestMetricsScrape(t *testing.T) {
	rg := newRig(t, nil)
	m := rg.srv.metrics
	for _, target := range []string{
		"/alloc?app_tag=order", "/alloc?app_tag=order&count=3", "/alloc?app_tag=ghost",
		"/alloc?app_tag=bad%21tag", "/health?app_tag=ghost2", "/snowflake?count=2", "/no/such/path",
	} {
		rg.do(t, "GET", target, "")
	}
	rg.flake.err = snowflake.ErrClockDriftTryLater
	rg.do(t, "GET", "/snowflake", "")
	m.Fetched("order", 3*time.Millisecond, nil)
	m.Fetched("order", time.Second, errors.New("timeout"))
	m.Fetched("order", time.Millisecond, fmt.Errorf("%w: got (5, 15]", segment.ErrRewound))
	m.StoreConflict("fetch")
	m.StoreConflict("fetch")
	m.StoreConflict("acquire")
	m.Fetched("ghost3", time.Millisecond, segment.ErrUnknownTag)
	m.Fetched("bad tag!", time.Millisecond, nil)
	m.GaveBack("order", 10)
	m.Wasted("order", 5)
	m.Wasted("bad tag!", 5)

	got := rg.do(t, "GET", "/metrics", "")
	if got.status != 200 {
		t.Fatalf("/metrics = %d", got.status)
	}
	for _, want := range []string{
		`idalloc_ids_issued_total{app_tag="order",mode="segment"} 4`,
		`idalloc_ids_issued_total{app_tag="",mode="snowflake"} 2`,
		`idalloc_segment_ids_buffered{app_tag="order"} 42`,
		`idalloc_segment_step{app_tag="order"} 2000`,
		`idalloc_segment_fetches_total{app_tag="order"} 3`,
		`idalloc_segment_fetch_errors_total{app_tag="order"} 2`,
		`idalloc_segment_ranges_refused_total{app_tag="order"} 1`,
		`idalloc_store_conflicts_total{op="fetch"} 2`,
		`idalloc_store_conflicts_total{op="acquire"} 1`,
		`idalloc_segment_fetch_duration_seconds_bucket{app_tag="order",le=`,
		`idalloc_segment_ids_given_back_total{app_tag="order"} 10`,
		`idalloc_segment_ids_wasted_total{app_tag="order"} 5`,
		`idalloc_snowflake_clock_drift_events_total{outcome="try_later"} 1`,
		`idalloc_snowflake_clock_drift_events_total{outcome="waited"} 0`,
		`idalloc_snowflake_clock_drift_events_total{outcome="too_large"} 0`,
		`idalloc_workerlease_seconds_left 12.5`,
		`idalloc_workerlease_worker_id 7`,
		`idalloc_http_requests_total{code="200",route="/alloc"} 2`,
		`idalloc_http_requests_total{code="404",route="/alloc"} 1`,
		`idalloc_http_requests_total{code="400",route="/alloc"} 1`,
		`idalloc_http_requests_total{code="404",route="unmatched"} 1`,
		`idalloc_http_requests_total{code="503",route="/snowflake"} 1`,
		`idalloc_http_request_duration_seconds_bucket{route="/alloc",le=`,
	} {
		if !strings.Contains(got.raw, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	for _, leak := range []string{"ghost", "bad", "/no/such/path"} {
		if strings.Contains(got.raw, leak) {
			t.Errorf("scrape has a series for %q", leak)
		}
	}
	if problems, err := testutil.GatherAndLint(rg.reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestNewMetricsConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("second NewMetrics on one registry succeeded, want an error")
	}
}

// TestHTTPMetricsConcurrent checks that the sharded counts add up under
// concurrent requests.
func TestHTTPMetricsConcurrent(t *testing.T) {
	rg := newRig(t, nil)
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				rg.srv.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/alloc?app_tag=order", nil))
			}
		})
	}
	wg.Wait()
	scrape := rg.do(t, "GET", "/metrics", "").raw
	for _, want := range []string{
		`idalloc_http_requests_total{code="200",route="/alloc"} 800`,
		`idalloc_http_request_duration_seconds_count{route="/alloc"} 800`,
		`idalloc_http_request_duration_seconds_bucket{route="/alloc",le="+Inf"} 800`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}
