package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// BenchmarkStatus is GET /status, which an open monitor page asks once a
// second, at 1, 1,000 and 10,000 tags on the real allocator (each tag with
// a segment in memory): its first page of 100 tags, gzip accepted (as a
// browser asks) or not, and the page of the 100 busiest. Compare with
// BenchmarkAlloc, the cost of one ID request: a page left open costs the
// server about this much per second. The page by name costs what it
// holds; the pass over every tag that the instance's buffered total (and
// busiest first) needs is taken at most once a second, so a benchmark
// loop amortizes it: busiest first ranks every tag on each request.
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{1, 1000, 10_000} {
		b.Run(fmt.Sprintf("tags=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st, err := store.OpenSQLite(ctx, filepath.Join(fastTempDir(b), "status.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			// The seeded test_business is one of the n tags.
			for i := 1; i < n; i++ {
				if err := st.CreateTag(ctx, segment.Tag{AppTag: fmt.Sprintf("tag-%04d", i), Step: 1000}); err != nil {
					b.Fatal(err)
				}
			}
			alloc, err := segment.New(ctx, st, segment.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = alloc.Close(ctx) })
			for _, t := range alloc.Tags() {
				if _, err := alloc.Next(ctx, t.AppTag); err != nil {
					b.Fatal(err)
				}
			}
			srv, err := New(Config{}, Deps{Segments: alloc, Store: st})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = srv.Close() })
			// As a browser asks: gzip accepted (so from about 25 tags the
			// answer is gzipped), and as curl does.
			for _, c := range []struct{ name, target, enc string }{
				{"accept=gzip", "/status", "gzip"},
				{"accept=identity", "/status", "identity"},
				{"busiest", "/status?sort=busiest", "gzip"},
			} {
				b.Run(c.name, func(b *testing.B) {
					req := httptest.NewRequest(http.MethodGet, c.target, nil)
					req.Header.Set("Accept-Encoding", c.enc)
					h := srv.Handler()
					b.ReportAllocs()
					for b.Loop() {
						h.ServeHTTP(httptest.NewRecorder(), req)
					}
				})
			}
		})
	}
}
