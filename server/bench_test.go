package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/idalloc/idalloc/segment/dated"
)

// counterSegments is the cheapest allocator possible, so the benchmarks
// measure the HTTP layer alone. Only Next and DatedFormat are ever called.
type counterSegments struct {
	Segments
	n atomic.Int64
}

func (c *counterSegments) Next(context.Context, string) (int64, error) { return c.n.Add(1), nil }

// DatedFormat: no tag is dated, as an allocator without dated tags says.
func (c *counterSegments) DatedFormat(string) *dated.Format { return nil }

// counterFlake is the cheapest snowflake source, for the same reason. Only
// Next is ever called.
type counterFlake struct {
	Snowflakes
	n atomic.Int64
}

func (c *counterFlake) Next() (int64, error) { return c.n.Add(1), nil }

func benchServer(b *testing.B) http.Handler {
	b.Helper()
	srv, err := New(Config{}, Deps{Segments: &counterSegments{}, Store: &fakePinger{}, Snowflake: &counterFlake{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	return srv.Handler()
}

// bareChi is the naive handler /alloc must beat: url.Values, Header().Set,
// fmt, and no validation, metrics or recovery at all.
func bareChi() http.Handler {
	var n atomic.Int64
	r := chi.NewRouter()
	r.Get("/alloc", func(w http.ResponseWriter, r *http.Request) {
		_ = r.URL.Query().Get("app_tag")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"resp_code":0,"msg":"success","id":%d}`, n.Add(1))
	})
	return r
}

// noopChi answers nothing: what chi and httptest cost by themselves.
func noopChi() http.Handler {
	r := chi.NewRouter()
	r.Get("/alloc", func(http.ResponseWriter, *http.Request) {})
	return r
}

func serveLoop(b *testing.B, h http.Handler) { serveTarget(b, h, "/alloc?app_tag=order") }

func serveTarget(b *testing.B, h http.Handler, target string) {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

func serveParallel(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/alloc?app_tag=order", nil)
		for pb.Next() {
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	})
}

func BenchmarkAlloc(b *testing.B)   { serveLoop(b, benchServer(b)) }
func BenchmarkBareChi(b *testing.B) { serveLoop(b, bareChi()) }
func BenchmarkNoopChi(b *testing.B) { serveLoop(b, noopChi()) }

// BenchmarkSnowflake is GET /snowflake, the other hot path: the same
// allocations as NoopChi's (httptest's and chi's) plus the recorder's body.
func BenchmarkSnowflake(b *testing.B) { serveTarget(b, benchServer(b), "/snowflake") }

func BenchmarkAllocParallel(b *testing.B)   { serveParallel(b, benchServer(b)) }
func BenchmarkBareChiParallel(b *testing.B) { serveParallel(b, bareChi()) }

// BenchmarkLeafSegment is Leaf's segment route, a hot path too: Alloc's
// allocations (httptest's and the recorder's), none of its own.
func BenchmarkLeafSegment(b *testing.B) { serveTarget(b, benchServer(b), "/api/segment/get/order") }
