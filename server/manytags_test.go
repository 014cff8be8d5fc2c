package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// Budgets at manyTags tags (issue 11, item 12): Leaf-sized deployments have
// thousands of tags.
const (
	manyTags = 10_000
	// heapPerTagBudget is the live heap one tag may cost: its double buffer,
	// its row of the last reload, its share of the tag map; no metric
	// series of its own.
	heapPerTagBudget = 2 << 10
	// scrapeWireBudget is what one scrape may send to Prometheus, which
	// always asks for gzip, whatever the tag count: at most
	// metrics.DefaultMaxTagSeries tags have series of their own (issue 24).
	scrapeWireBudget = 64 << 10
	// scrapeLinesPerTag: app_tag labels IDs issued, IDs buffered and the
	// current step, one line each, for each tag with series of its own;
	// nothing else is per tag.
	scrapeLinesPerTag = 3
)

// TestManyTags creates 10,000 tags on the embedded store, takes one ID of
// each, and measures what they cost: live heap per tag (runtime.ReadMemStats
// after GC) and the size of a /metrics scrape, as Prometheus fetches it
// (gzip) and as text. Before issue 11 the figures were 2,911 B per tag and
// 13.98 MB of text (a per-tag fetch histogram); before issue 24, 1.7 MB of
// text (a series per tag). The test fails when a budget
// is exceeded. Under the race detector, whose bookkeeping is heap too and
// which makes the pure-Go SQLite many times slower, it runs a tenth of the
// tags and checks the scrape only.
func TestManyTags(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: creates 10,000 tags")
	}
	n := manyTags
	if raceEnabled {
		n /= 10
	}
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(fastTempDir(t), "many.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("tag-%06d", i)
		if err := st.CreateTag(ctx, segment.Tag{AppTag: names[i], Step: 1000}); err != nil {
			t.Fatal(err)
		}
	}

	before := liveHeap()
	reg := prometheus.NewRegistry()
	obs := mustObserver(t, reg)
	alloc, err := segment.New(ctx, st, segment.Config{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	deps := Deps{Segments: alloc, Store: st}
	watch(t, obs, deps, metrics.Sources{})
	srv, err := New(Config{Observer: obs, Metrics: mustMetrics(t, reg), Gatherer: reg}, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	for _, tag := range names {
		if _, err := alloc.Next(ctx, tag); err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
	}
	text := scrape(t, srv, false)
	textSize, textLines := len(text), strings.Count(text, "\n")
	tagLines := len(tagSample.FindAllString(text, -1))
	others := strings.Count(text, `app_tag="_other",`) + strings.Count(text, `app_tag="_other"}`) // not the help's
	text = ""
	wireSize := len(scrape(t, srv, true))
	tagsRec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(tagsRec, httptest.NewRequest("GET", "/tags", nil))
	tagsSize := tagsRec.Body.Len()
	tagsRec = nil
	perTag := float64(liveHeap()-before) / float64(n)
	runtime.KeepAlive(srv)

	t.Logf("%d tags: live heap %.0f B per tag; /metrics %d B as text (%d lines), %d B gzip; /tags %d B",
		n, perTag, textSize, textLines, wireSize, tagsSize)
	if perTag > heapPerTagBudget && !raceEnabled {
		t.Errorf("live heap per tag = %.0f B, want at most %d", perTag, heapPerTagBudget)
	}
	if wireSize > scrapeWireBudget {
		t.Errorf("gzip scrape = %d B, want at most %d", wireSize, scrapeWireBudget)
	}
	total := n + 1 // and the seeded test_business
	capped := total > metrics.DefaultMaxTagSeries
	if want := scrapeLinesPerTag * min(total, metrics.DefaultMaxTagSeries+1); tagLines != want {
		t.Errorf("scrape has %d samples with an app_tag, want %d (%d per tag with series of its own, and _other's)", tagLines, want, scrapeLinesPerTag)
	}
	if capped != (others == scrapeLinesPerTag) {
		t.Errorf("scrape has %d samples for _other at %d tags, want %d past %d tags and none below", others, total, scrapeLinesPerTag, metrics.DefaultMaxTagSeries)
	}
}

// tagSample is a sample line of a tag's (or _other's) series.
var tagSample = regexp.MustCompile(`(?m)^idalloc_\w+\{[^}]*app_tag="[^"]+"`)

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // the first may leave objects queued for finalizers
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func scrape(tb testing.TB, srv *Server, gzip bool) string {
	tb.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || (gzip && rec.Header().Get("Content-Encoding") != "gzip") {
		tb.Fatalf("/metrics (gzip %v): %d, Content-Encoding %q", gzip, rec.Code, rec.Header().Get("Content-Encoding"))
	}
	return rec.Body.String()
}

// fastTempDir is a temporary directory in memory (/dev/shm) where there is
// one: 20,000 synced SQLite writes take seconds there rather than tens of
// seconds on a disk, and durability is not what this test measures.
func fastTempDir(tb testing.TB) string {
	tb.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "idalloc-test-"); err == nil {
			tb.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return tb.TempDir()
}
