package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/store/storetest"
)

// getJSON serves GET target as an admin and decodes the answer.
func getJSON(tb testing.TB, h http.Handler, target string) map[string]any {
	tb.Helper()
	rec := serve(h, "GET", target, "", loopback, bearer)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != 200 {
		tb.Fatalf("GET %s = %d %s (%v)", target, rec.Code, rec.Body, err)
	}
	return m
}

// tagsByApp indexes the "tags" of an answer by app_tag.
func tagsByApp(m map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range m["tags"].([]any) {
		row := r.(map[string]any)
		out[row["app_tag"].(string)] = row
	}
	return out
}

// TestDatedTagsAndStatus: GET /tags and GET /status show a dated tag's
// settings and its current period (stamp, issued here, left), null before
// its first ID; other tags' rows have none of these fields.
func TestDatedTagsAndStatus(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			clock := testclock.New(time.Date(2026, 11, 26, 16, 30, 0, 0, time.UTC))
			rg := newDatedRig(t, d.Open(t), clock.Now, centuries)
			for _, body := range []string{
				`{"app_tag":"ord","format":"dated","time_zone":"Asia/Shanghai","prefix":"ORD","separator":"-","step":10}`,
				`{"app_tag":"idle","format":"dated","period":"hour","length":4}`,
			} {
				if rec := serve(rg.h, "POST", "/tags", body, loopback, bearer); rec.Code != 201 {
					t.Fatalf("POST /tags %s = %d %s", body, rec.Code, rec.Body)
				}
			}
			for range 3 {
				serve(rg.h, "GET", "/alloc?app_tag=ord", "", loopback, "")
			}

			// GET /tags: JSON numbers, as its other figures.
			tags := tagsByApp(getJSON(t, rg.h, "/tags"))
			ord, idle, tb := tags["ord"], tags["idle"], tags["test_business"]
			want := map[string]any{"format": "dated", "length": 6.0, "period": "day", "time_zone": "Asia/Shanghai",
				"prefix": "ORD", "separator": "-"}
			for k, v := range want {
				if ord[k] != v {
					t.Errorf("GET /tags: ord %s = %#v, want %#v", k, ord[k], v)
				}
			}
			// Shanghai's 27th began at 16:00 UTC; 3 of 999,999 issued.
			wantPeriod := map[string]any{"stamp": 20261127.0, "starts_at": "2026-11-26T16:00:00.000Z",
				"ends_at": "2026-11-27T16:00:00.000Z", "issued": 3.0, "left": 999996.0}
			if p, _ := ord["current_period"].(map[string]any); !mapHas(p, wantPeriod) {
				t.Errorf("GET /tags: ord current_period = %v, want %v", ord["current_period"], wantPeriod)
			}
			if p, ok := idle["current_period"]; !ok || p != nil || idle["period"] != "hour" || idle["prefix"] != "" {
				t.Errorf("GET /tags: idle = %v, want period hour, prefix \"\", current_period null before its first ID", idle)
			}
			for _, k := range []string{"period", "time_zone", "prefix", "separator", "current_period"} {
				if _, ok := tb[k]; ok {
					t.Errorf("GET /tags: test_business has %q: only dated tags have it", k)
				}
			}

			// GET /status: the same, every figure a string.
			tags = tagsByApp(getJSON(t, rg.h, "/status"))
			ord, idle, tb = tags["ord"], tags["idle"], tags["test_business"]
			for k, v := range want {
				if k != "length" && ord[k] != v {
					t.Errorf("GET /status: ord %s = %#v, want %#v", k, ord[k], v)
				}
			}
			wantPeriod = map[string]any{"stamp": "20261127", "starts_at": "2026-11-26T16:00:00.000Z",
				"ends_at": "2026-11-27T16:00:00.000Z", "issued": "3", "left": "999996", "next_prefetched": "0"}
			if p, _ := ord["current_period"].(map[string]any); !mapHas(p, wantPeriod) || len(p) != len(wantPeriod) {
				t.Errorf("GET /status: ord current_period = %v, want %v", ord["current_period"], wantPeriod)
			}
			if p, ok := idle["current_period"]; !ok || p != nil || idle["time_zone"] != "UTC" {
				t.Errorf("GET /status: idle = %v, want time_zone UTC and current_period null", idle)
			}
			if _, ok := tb["period"]; ok {
				t.Errorf("GET /status: test_business has a period: %v", tb)
			}
		})
	}
}

// mapHas reports whether m holds every pair of want.
func mapHas(m, want map[string]any) bool {
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return m != nil
}

// TestDatedMetrics: a dated tag has its period's numbers left as the one
// series of its own (idalloc_segment_period_ids_left), other tags none,
// and the waste help names period_ended.
func TestDatedMetrics(t *testing.T) {
	rg := newDatedRig(t, storetest.SQLite().Open(t), nil, 0)
	if rec := serve(rg.h, "POST", "/tags", `{"app_tag":"y","format":"dated","period":"year","length":4,"step":10}`, loopback, bearer); rec.Code != 201 {
		t.Fatalf("POST /tags = %d %s", rec.Code, rec.Body)
	}
	for _, target := range []string{"/alloc?app_tag=y&count=3", "/alloc?app_tag=test_business"} {
		if rec := serve(rg.h, "GET", target, "", loopback, ""); rec.Code != 200 {
			t.Fatalf("GET %s = %d %s", target, rec.Code, rec.Body)
		}
	}
	text := serve(rg.h, "GET", "/metrics", "", loopback, bearer).Body.String()
	for _, want := range []string{
		`idalloc_segment_period_ids_left{app_tag="y"} 9996`,
		`idalloc_segment_ids_wasted_total{reason="period_ended"} 0`,
		"batch_failed, interleaved, give_back_refused, give_back_failed, period_ended.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(text, `period_ids_left{app_tag="test_business"}`) {
		t.Errorf("/metrics has a period series for a sequential tag")
	}
}

// offsetClock is the real clock moved by an offset the test sets.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// TestDatedClockSkew: an instance whose clock is 5 s ahead of the store's
// refuses dated tags (503, resp_code 3, kind unavailable, Retry-After)
// and serves the others; once the clocks agree it serves them again.
func TestDatedClockSkew(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			clock := &offsetClock{}
			clock.off.Store(int64(5 * time.Second))
			rg := newDatedRig(t, d.Open(t), clock.Now, time.Second)
			if rec := serve(rg.h, "POST", "/tags", `{"app_tag":"d","format":"dated"}`, loopback, bearer); rec.Code != 201 {
				t.Fatalf("POST /tags = %d %s", rec.Code, rec.Body)
			}
			for _, target := range []string{"/alloc?app_tag=d", "/alloc?app_tag=d&count=2"} {
				rec := serve(rg.h, "GET", target, "", loopback, "")
				var env struct {
					RespCode int    `json:"resp_code"`
					Kind     string `json:"kind"`
					Msg      string `json:"msg"`
				}
				_ = json.Unmarshal(rec.Body.Bytes(), &env)
				if rec.Code != 503 || env.RespCode != 3 || env.Kind != "unavailable" || rec.Header().Get("Retry-After") != "1" ||
					!strings.Contains(env.Msg, "dated.max_clock_skew") {
					t.Errorf("GET %s, clock 5s ahead = %d %s (Retry-After %q), want 503 unavailable naming dated.max_clock_skew",
						target, rec.Code, rec.Body, rec.Header().Get("Retry-After"))
				}
			}
			if rec := serve(rg.h, "GET", "/alloc?app_tag=test_business", "", loopback, ""); rec.Code != 200 {
				t.Errorf("a sequential tag while dated ones are refused = %d %s, want 200", rec.Code, rec.Body)
			}
			clock.off.Store(0)
			deadline := time.Now().Add(10 * time.Second)
			for rec := serve(rg.h, "GET", "/alloc?app_tag=d", "", loopback, ""); rec.Code != 200; rec = serve(rg.h, "GET", "/alloc?app_tag=d", "", loopback, "") {
				if time.Now().After(deadline) {
					t.Fatalf("10s after the clocks agree: %d %s, want the dated tag served", rec.Code, rec.Body)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// discardWriter is a ResponseWriter that allocates nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// TestDatedAllocAllocations: /alloc allocates nothing, single or batch,
// for a sequential tag on a server that has dated tags too, and for a
// dated tag's numbers and text: the IDs and their text are written into
// the pooled body.
func TestDatedAllocAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops sync.Pool items, so the pooled bodies allocate")
	}
	rg := newDatedRig(t, storetest.SQLite().Open(t), nil, 0)
	for _, body := range []string{
		`{"app_tag":"num","format":"dated","length":10,"step":1000000}`,
		`{"app_tag":"ord","format":"dated","length":10,"prefix":"ORD","separator":"-","step":1000000}`,
	} {
		if rec := serve(rg.h, "POST", "/tags", body, loopback, bearer); rec.Code != 201 {
			t.Fatalf("POST /tags %s = %d %s", body, rec.Code, rec.Body)
		}
	}
	allocs := func(target string) float64 {
		req := httptest.NewRequest("GET", target, nil)
		w := &discardWriter{h: http.Header{}}
		rg.unchecked.ServeHTTP(w, req) // the first fetch
		return testing.AllocsPerRun(200, func() { rg.unchecked.ServeHTTP(w, req) })
	}
	for _, count := range []string{"", "&count=10"} {
		for _, tag := range []string{"test_business", "num", "ord"} {
			if n := allocs("/alloc?app_tag=" + tag + count); n != 0 {
				t.Errorf("/alloc?app_tag=%s%s allocates %.0f times, want 0", tag, count, n)
			}
		}
	}
}
