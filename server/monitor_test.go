package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
