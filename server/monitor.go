package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The monitor page (docs/api.md §10): plain HTML, CSS and JavaScript embedded in
// the binary, no build step, nothing fetched from elsewhere. It holds no
// data and no secret; its script polls GET /status (status.go) once a
// second for the page of tags it shows (filtered by a prefix, by name or
// busiest first) and, when the instance has an admin_token, asks the
// operator for it and keeps it in a variable of the tab, never in
// storage, a cookie or a URL. A second script decodes a snowflake ID.
//
//go:embed monitor
var monitorFiles embed.FS

// asset is one embedded file as served: its bytes, gzipped once, and a
// validator so that a reload costs a 304.
type asset struct {
	contentType string
	plain, gz   []byte
	etag        string
}

// Asset names, as their files are called under monitor/.
const (
	assetPage   = "index.html"
	assetScript = "monitor.js"
	assetDecode = "decode.js"
	assetStyle  = "monitor.css"
)

// monitorAssets reads and compresses the files on first use, once per
// process: they are constant, and servers made by tests share them.
var monitorAssets = sync.OnceValue(func() map[string]*asset {
	types := map[string]string{
		assetPage:   "text/html; charset=utf-8",
		assetScript: "text/javascript; charset=utf-8",
		assetDecode: "text/javascript; charset=utf-8",
		assetStyle:  "text/css; charset=utf-8",
	}
	out := make(map[string]*asset, len(types))
	for name, ct := range types {
		plain, err := monitorFiles.ReadFile("monitor/" + name)
		if err != nil {
			panic("server: embedded monitor file missing: " + name) // a build without it is broken
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // the level is valid
		_, _ = zw.Write(plain)                                  // a bytes.Buffer does not fail
		_ = zw.Close()
		sum := sha256.Sum256(plain)
		out[name] = &asset{contentType: ct, plain: plain, gz: gz.Bytes(),
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
	}
	return out
})

// monitorCSP lets the page run its own script and style and talk to its
// own origin only: no inline script for a tag name to smuggle in, no
// framing (the page takes an admin token), no form posting anywhere (the
// token field must never be submitted into a URL).
const monitorCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// handleMonitor serves one embedded file.
func (s *Server) handleMonitor(name string) handlerFunc {
	a := monitorAssets()[name]
	return func(w http.ResponseWriter, r *http.Request) int {
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Cache-Control", "no-cache") // revalidate: a new binary may serve a new page
		h.Set("ETag", a.etag)
		h.Set("Vary", "Accept-Encoding")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if name == assetPage {
			h.Set("Content-Security-Policy", monitorCSP)
			h.Set("X-Frame-Options", "DENY")
		}
		if etagMatch(r.Header.Get("If-None-Match"), a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return http.StatusNotModified
		}
		body := a.plain
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			body = a.gz
		}
		_, _ = w.Write(body)
		return http.StatusOK
	}
}

// etagMatch reports whether an If-None-Match value names etag (or is "*").
func etagMatch(inm, etag string) bool {
	for v := range strings.SplitSeq(inm, ",") {
		v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
		if v == etag || v == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip: listed
// by name or as "*", and not with q=0.
func acceptsGzip(ae string) bool {
	for v := range strings.SplitSeq(ae, ",") {
		coding, params, _ := strings.Cut(v, ";")
		coding = strings.TrimSpace(coding)
		if !strings.EqualFold(coding, "gzip") && coding != "*" {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			q, _ = strconv.ParseFloat(v, 64) // unreadable: 0, no gzip
		}
		return q > 0
	}
	return false
}
