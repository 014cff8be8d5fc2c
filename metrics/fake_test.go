package metrics

import (
	"iter"
	"slices"
	"sync"

	"github.com/idalloc/idalloc/segment"
)

// fakeSegments is an allocator's stats: every tag buffers 42 IDs at step
// 2000 and has issued IDs and received ranges as the test sets.
type fakeSegments struct {
	mu      sync.Mutex
	issued  map[string]int64
	refills map[string]int64
}

func newFakeSegments(tags ...string) *fakeSegments {
	f := &fakeSegments{issued: map[string]int64{}, refills: map[string]int64{}}
	for _, t := range tags {
		f.setIssued(t, 0)
	}
	return f
}

// setIssued serves tag, which has issued n IDs.
func (f *fakeSegments) setIssued(tag string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issued[tag] = n
}

// setRefills makes tag's ranges received n.
func (f *fakeSegments) setRefills(tag string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refills[tag] = n
}

// AllStats yields every tag's figures, from a copy: a test may change
// the fake while a loop runs.
func (f *fakeSegments) AllStats() iter.Seq[segment.TagStats] {
	f.mu.Lock()
	all := make([]segment.TagStats, 0, len(f.issued))
	for tag, n := range f.issued {
		all = append(all, segment.TagStats{AppTag: tag, Format: segment.FormatSequential, Buffered: 42, Step: 2000, Issued: n,
			Refills: f.refills[tag]})
	}
	f.mu.Unlock()
	return slices.Values(all)
}
