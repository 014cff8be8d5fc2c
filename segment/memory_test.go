package segment_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// heapInuse is the heap in use after two collections: what is live, in the
// spans that hold it.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// perTag measures what n tags cost an allocator on an in-memory store, in
// heap bytes per tag: listed (the allocator started, no tag used yet) and
// used (one ID taken of each). The store's own rows are made and read
// once before the first reading, so they are not counted.
func perTag(tb testing.TB, n int) (listed, used float64) {
	tb.Helper()
	ctx := context.Background()
	st := newFakeStore()
	for i := range n {
		tag := fmt.Sprintf("tenant-%06d", i)
		st.rows[tag] = &segment.Tag{AppTag: tag, Step: 1000, Start: 1, Format: segment.FormatSequential, Description: "a tenant"}
	}
	if _, _, err := st.TagsSince(ctx, time.Time{}, "", 1); err != nil {
		tb.Fatal(err)
	}
	before := heapInuse()
	a, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	defer a.Close(ctx)
	loaded := heapInuse()
	for i := range n {
		if _, err := a.Next(ctx, fmt.Sprintf("tenant-%06d", i)); err != nil {
			tb.Fatal(err)
		}
	}
	after := heapInuse()
	runtime.KeepAlive(a)
	return float64(loaded-before) / float64(n), float64(after-before) / float64(n)
}

// TestMemoryPerTag bounds what a tag costs in the heap (docs/api.md §13: 2 KiB
// of resident memory per tag, which the collector's headroom doubles): at
// most 1 KiB with one ID taken. It measures 20,000 tags;
// BenchmarkTagMemory measures 100,000.
func TestMemoryPerTag(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the 20,000-tag measurement")
	}
	listed, used := perTag(t, 20_000)
	t.Logf("20,000 tags: %.0f B/tag listed, %.0f B/tag with one ID taken of each", listed, used)
	if used > 1024 {
		t.Errorf("a tag with one ID taken costs %.0f bytes of heap, want at most 1024", used)
	}
}

// BenchmarkTagMemory reports the heap bytes per tag of 100,000 tags:
// listed-B/tag (served, none used yet) and used-B/tag (one ID taken of
// each). Run it with -benchtime 1x.
func BenchmarkTagMemory(b *testing.B) {
	for b.Loop() {
		listed, used := perTag(b, 100_000)
		b.ReportMetric(listed, "listed-B/tag")
		b.ReportMetric(used, "used-B/tag")
	}
}
