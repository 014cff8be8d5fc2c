package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/metrics"
)

func getAsset(tb testing.TB, h http.Handler, path string, headers ...string) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestMonitorAssets serves the page and its three files as a browser gets
// them: typed, gzipped when asked, revalidated by ETag, the page under a
// policy that runs its own script only. It logs the page's weight.
func TestMonitorAssets(t *testing.T) {
	h := newRig(t, nil).srv.Handler()
	var plainTotal, gzTotal int
	for _, c := range []struct{ path, ctype, marker string }{
		{"/", "text/html; charset=utf-8", `<script src="/monitor.js" defer></script>`},
		{"/monitor.js", "text/javascript; charset=utf-8", `fetch(path`},
		{"/decode.js", "text/javascript; charset=utf-8", `"/snowflake/"`},
		{"/monitor.css", "text/css; charset=utf-8", `font-variant-numeric: tabular-nums`},
	} {
		plain := getAsset(t, h, c.path)
		if plain.Code != 200 || plain.Header().Get("Content-Type") != c.ctype || plain.Header().Get("Content-Encoding") != "" {
			t.Fatalf("%s: %d %q %q, want 200 %q unencoded", c.path, plain.Code, plain.Header().Get("Content-Type"), plain.Header().Get("Content-Encoding"), c.ctype)
		}
		if !strings.Contains(plain.Body.String(), c.marker) {
			t.Errorf("%s lacks %q", c.path, c.marker)
		}
		if got := plain.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options = %q", c.path, got)
		}

		zipped := getAsset(t, h, c.path, "Accept-Encoding", "gzip, deflate, br")
		if zipped.Header().Get("Content-Encoding") != "gzip" || zipped.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s with gzip accepted: Content-Encoding %q, Vary %q", c.path, zipped.Header().Get("Content-Encoding"), zipped.Header().Get("Vary"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped.Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(unzipped, plain.Body.Bytes()) {
			t.Errorf("%s: the gzipped body is not the plain one (%v)", c.path, err)
		}

		etag := plain.Header().Get("ETag")
		if again := getAsset(t, h, c.path, "If-None-Match", etag); etag == "" || again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("%s revalidated with ETag %q: %d, %d bytes; want 304, none", c.path, etag, again.Code, again.Body.Len())
		}
		plainTotal += plain.Body.Len()
		gzTotal += zipped.Body.Len()
	}
	t.Logf("monitor page weight: %d bytes (%d gzipped) for /, /monitor.js, /decode.js and /monitor.css", plainTotal, gzTotal)

	page := getAsset(t, h, "/")
	csp := page.Header().Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "form-action 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(page.Body.String(), "<script>") || strings.Contains(page.Body.String(), "http://") || strings.Contains(page.Body.String(), "https://") {
		t.Errorf("the page runs inline script or names another origin")
	}
}

func TestAcceptsGzip(t *testing.T) {
	for ae, want := range map[string]bool{
		"":                  false,
		"gzip":              true,
		"GZIP":              true,
		"deflate, gzip":     true,
		"gzip;q=0":          false,
		"gzip; q=0.000":     false,
		"gzip;q=0.5":        true,
		"*":                 true,
		"br, *;q=0":         false,
		"identity":          false,
		"gzip;q=nonsense":   false,
		"x-gzip, identity":  false,
		"deflate;q=1, gzip": true,
	} {
		if got := acceptsGzip(ae); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", ae, got, want)
		}
	}
}

// TestStatusHistory: /status carries each tag's last five minutes for the
// page's sparklines (docs/api.md §10): the steps' length and where they
// end, once for the page, and per tag its IDs a second and refills in
// each whole step, or null when it has none, with its refills in all.
// The step under way is not shown until it ends.
func TestStatusHistory(t *testing.T) {
	rg := newRig(t, nil)
	rg.freeze()
	clock := rg.clock.Load()
	t0 := time.Now().Truncate(metrics.HistoryStep).Add(time.Minute)
	clock.Set(t0)
	history := func(when string) (map[string]any, map[string]map[string]any) {
		t.Helper()
		got := rg.do(t, "GET", "/status", "", adminAuth...)
		if got.status != 200 {
			t.Fatalf("%s: %d %s", when, got.status, got.raw)
		}
		tags := map[string]map[string]any{}
		for _, v := range got.body["tags"].([]any) {
			tag := v.(map[string]any)
			tags[tag["app_tag"].(string)] = tag
		}
		return got.body, tags
	}
	const idle = "order and test_business idle"
	body, tags := history(idle)
	if body["history_step_seconds"] != 10.0 || body["history_ends_at"] != t0.UTC().Format(timeLayout) {
		t.Errorf("%s: history_step_seconds %v, history_ends_at %v; want 10, %s", idle, body["history_step_seconds"], body["history_ends_at"], t0.UTC().Format(timeLayout))
	}
	for name, tag := range tags {
		if h, ok := tag["history"]; !ok || h != nil || tag["refills"] != "0" {
			t.Errorf("%s: %s has history %v (present %v), refills %v; want null, 0", idle, name, h, ok, tag["refills"])
		}
	}

	rg.seg.setIssued("order", 50)
	rg.seg.setRefills("order", 1)
	clock.Add(5 * time.Second)
	if _, tags := history("within the step"); tags["order"]["history"] != nil || tags["order"]["refills"] != "1" {
		t.Errorf("within the step: order's history %v, refills %v; want null (the step under way is not shown), 1",
			tags["order"]["history"], tags["order"]["refills"])
	}

	clock.Add(10 * time.Second)
	body, tags = history("the step ended")
	if want := t0.Add(metrics.HistoryStep).UTC().Format(timeLayout); body["history_ends_at"] != want {
		t.Errorf("history_ends_at %v, want %s", body["history_ends_at"], want)
	}
	h, _ := tags["order"]["history"].(map[string]any)
	rates, _ := h["ids_per_second"].([]any)
	refills, _ := h["refills"].([]any)
	wantRates := make([]any, metrics.HistoryPoints)
	wantRefills := make([]any, metrics.HistoryPoints)
	for i := range wantRates {
		wantRates[i], wantRefills[i] = 0.0, 0.0
	}
	wantRates[len(wantRates)-1], wantRefills[len(wantRefills)-1] = 5.0, 1.0 // 50 IDs in 10 s
	if !slices.Equal(rates, wantRates) || !slices.Equal(refills, wantRefills) {
		t.Errorf("order's history %v, want ids_per_second %v and refills %v", h, wantRates, wantRefills)
	}
	if tags["test_business"]["history"] != nil {
		t.Errorf("test_business, idle, has history %v, want null", tags["test_business"]["history"])
	}
}

// TestAppendRate: a step's rate as /status writes it: whole from 100 up,
// three significant digits below, so a trickle spread over minutes shows.
func TestAppendRate(t *testing.T) {
	for r, want := range map[float64]string{
		0: "0", 5: "5", 0.5: "0.5", 42.345: "42.3", 99.94: "99.9", 100: "100", 1234.5: "1235",
		1.0 / 300: "0.00333", 2_000_000.4: "2000000",
	} {
		if got := string(appendRate(nil, r)); got != want {
			t.Errorf("appendRate(%v) = %s, want %s", r, got, want)
		}
	}
}
