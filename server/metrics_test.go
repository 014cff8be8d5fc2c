package server

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
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
	m := rg.obs
	for _, target := range []string{
		"/alloc?app_tag=order", "/alloc?app_tag=order&count=3", "/alloc?app_tag=ghost",
		"/alloc?app_tag=bad%21tag", "/health?app_tag=ghost2", "/snowflake?count=2", "/no/such/path",
	} {
		rg.do(t, "GET", target, "")
	}
	rg.flake.err = snowflake.ErrClockDriftTryLater
	rg.do(t, "GET", "/snowflake", "")
	// The generator, not the front end, tells the Observer of snowflake IDs
	// and drifts (snowflake.Observer): the fake source tells nobody, so the
	// test tells them for it, as the generator would have.
	m.Issued(2)
	m.Drift(snowflake.DriftTryLater, 20*time.Millisecond)
	m.Fetched("order", 3*time.Millisecond, nil)
	m.Fetched("order", time.Second, errors.New("timeout"))
	m.Fetched("order", 5*time.Second, fmt.Errorf("%w: %w", segment.ErrFetchTimedOut, context.DeadlineExceeded))
	m.Fetched("order", time.Millisecond, fmt.Errorf("%w: got (5, 15]", segment.ErrRewound))
	m.StoreConflict("fetch")
	m.StoreConflict("fetch")
	m.StoreConflict("acquire")
	m.Fetched("ghost3", time.Millisecond, segment.ErrUnknownTag)
	m.GaveBack("order", 10)
	m.Wasted("order", 5, segment.WasteGiveBackRefused)
	m.Wasted("order", 2, segment.WasteBatch)

	got := rg.do(t, "GET", "/metrics", "", adminAuth...)
	if got.status != 200 {
		t.Fatalf("/metrics = %d", got.status)
	}
	for _, want := range []string{
		`idalloc_ids_issued_total{app_tag="order",mode="segment"} 4`,
		`idalloc_ids_issued_total{app_tag="",mode="snowflake"} 2`,
		`idalloc_segment_ids_buffered{app_tag="order"} 42`,
		`idalloc_segment_step{app_tag="order"} 2000`,
		`idalloc_segment_tags 2`,
		`idalloc_segment_fetches_total 4`,
		`idalloc_segment_fetch_errors_total 3`,
		`idalloc_segment_fetch_timeouts_total 1`,
		`idalloc_segment_ranges_refused_total 1`,
		`idalloc_store_conflicts_total{op="fetch"} 2`,
		`idalloc_store_conflicts_total{op="acquire"} 1`,
		`idalloc_segment_fetch_duration_seconds_bucket{le="0.0005"} 0`,
		`idalloc_segment_fetch_duration_seconds_count 4`,
		`idalloc_segment_ids_given_back_total 10`,
		`idalloc_segment_ids_wasted_total{reason="give_back_refused"} 5`,
		`idalloc_segment_ids_wasted_total{reason="batch_failed"} 2`,
		`idalloc_segment_ids_wasted_total{reason="interleaved"} 0`,
		`idalloc_segment_ids_wasted_total{reason="give_back_failed"} 0`,
		`idalloc_snowflake_clock_drift_events_total{outcome="try_later"} 1`,
		`idalloc_snowflake_clock_drift_events_total{outcome="waited"} 0`,
		`idalloc_snowflake_clock_drift_events_total{outcome="too_large"} 0`,
		`idalloc_workerlease_left_seconds 12.5`,
		`idalloc_workerlease_info{cluster="default",worker_id="7"} 1`,
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
	for _, leak := range []string{"ghost", "bad", "/no/such/path", "worker_id 7", "seconds_left"} {
		if strings.Contains(got.raw, leak) {
			t.Errorf("scrape has %q", leak)
		}
	}
	if problems, err := testutil.GatherAndLint(rg.reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestMetricsFromTheStart: before any fetch, give-back or waste, the
// counters an alert takes rate() of are there at 0, and every tag of the
// store has its per-tag series.
func TestMetricsFromTheStart(t *testing.T) {
	rg := newRig(t, nil)
	scrape := rg.do(t, "GET", "/metrics", "", adminAuth...).raw
	want := []string{
		`idalloc_segment_fetches_total 0`,
		`idalloc_segment_fetch_errors_total 0`,
		`idalloc_segment_fetch_timeouts_total 0`,
		`idalloc_segment_ranges_refused_total 0`,
		`idalloc_segment_ids_given_back_total 0`,
		`idalloc_segment_fetch_duration_seconds_count 0`,
	}
	for _, why := range segment.WasteReasons() {
		want = append(want, fmt.Sprintf(`idalloc_segment_ids_wasted_total{reason=%q} 0`, why))
	}
	for _, tag := range []string{"order", "test_business"} {
		want = append(want,
			fmt.Sprintf(`idalloc_ids_issued_total{app_tag=%q,mode="segment"} `, tag),
			fmt.Sprintf(`idalloc_segment_ids_buffered{app_tag=%q} `, tag),
			fmt.Sprintf(`idalloc_segment_step{app_tag=%q} `, tag))
	}
	for _, w := range want {
		if !strings.Contains(scrape, w) {
			t.Errorf("fresh scrape lacks %s", w)
		}
	}
}

// TestPerTagSeries: app_tag labels only the three figures an operator reads
// per tag; every other family is per instance, so the scrape grows by three
// lines per tag (four for a dated tag: TestDatedMetrics).
func TestPerTagSeries(t *testing.T) {
	rg := newRig(t, nil)
	m := rg.obs
	m.Fetched("order", time.Millisecond, nil)
	m.Fetched("order", time.Millisecond, errors.New("down"))
	m.GaveBack("order", 1)
	m.Wasted("order", 1, segment.WasteBatch)
	families, err := rg.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var tagged []string
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "app_tag" && l.GetValue() != "" {
					tagged = append(tagged, f.GetName())
				}
			}
		}
	}
	slices.Sort(tagged)
	tagged = slices.Compact(tagged)
	want := []string{"idalloc_ids_issued_total", "idalloc_segment_ids_buffered", "idalloc_segment_step"}
	if !slices.Equal(tagged, want) {
		t.Errorf("families with an app_tag label: %v, want %v", tagged, want)
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
	scrape := rg.do(t, "GET", "/metrics", "", adminAuth...).raw
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
