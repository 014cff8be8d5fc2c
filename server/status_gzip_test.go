package server

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
)

// TestStatusGzipped: with many tags /status is gzipped for a client that
// accepts it (a browser always does) and plain for one that does not; both
// carry the same answer.
func TestStatusGzipped(t *testing.T) {
	var tags []string
	for i := range 100 {
		tags = append(tags, fmt.Sprintf("tag_%03d", i))
	}
	rg := newRig(t, func(_ *Config, d *Deps) { d.Segments = newFakeSegments(tags...) })
	get := func(acceptEncoding string) (*httptest.ResponseRecorder, []byte) {
		t.Helper()
		req := httptest.NewRequest("GET", "/status", nil)
		for i := 0; i+1 < len(adminAuth); i += 2 {
			req.Header.Set(adminAuth[i], adminAuth[i+1])
		}
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		w := httptest.NewRecorder()
		rg.srv.Handler().ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("Accept-Encoding %q: status %d %s", acceptEncoding, w.Code, w.Body)
		}
		return w, w.Body.Bytes()
	}

	plainW, plain := get("")
	if ce := plainW.Header().Get("Content-Encoding"); ce != "" || len(plain) < statusGzipMin {
		t.Fatalf("without Accept-Encoding: Content-Encoding %q, %d bytes; want plain and at least %d", ce, len(plain), statusGzipMin)
	}
	gzW, gz := get("gzip, deflate, br")
	if ce := gzW.Header().Get("Content-Encoding"); ce != "gzip" || gzW.Header().Get("Vary") != "Accept-Encoding" {
		t.Fatalf("with gzip accepted: Content-Encoding %q, Vary %q; want gzip, Accept-Encoding", ce, gzW.Header().Get("Vary"))
	}
	zr, err := gzip.NewReader(gzW.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// The answers differ in "now" only, which has a fixed width.
	if len(unzipped) != len(plain) {
		t.Errorf("gzipped answer is %d bytes unzipped, the plain one %d", len(unzipped), len(plain))
	}
	t.Logf("/status with %d tags: %d bytes, %d gzipped", len(tags), len(plain), len(gz))
	if len(gz)*4 > len(plain) {
		t.Errorf("gzip saved too little: %d of %d bytes", len(gz), len(plain))
	}
}
