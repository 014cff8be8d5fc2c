package segment

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func testBuffers(from, n int) []*buffer {
	bs := make([]*buffer, n)
	for i := range bs {
		bs[i] = &buffer{tag: fmt.Sprintf("t%06d", from+i)}
	}
	return bs
}

// TestBufferIndexAddsAndFolds: a small index folds every addition; a large
// one puts a few tags in recent, a fold moves them to base, and recentMax
// tags at once go to base directly; every tag is found, and each visits
// every buffer once.
func TestBufferIndexAddsAndFolds(t *testing.T) {
	var x bufferIndex
	x.init()
	sizes := func() (int, int) { return len(*x.base.Load()), len(*x.recent.Load()) }
	x.add(testBuffers(0, 10))
	if b, r := sizes(); b != 10 || r != 0 {
		t.Errorf("after adding 10: base %d, recent %d; want 10, 0", b, r)
	}
	n := foldAlways
	x.add(testBuffers(10, n-10))
	x.add(testBuffers(n, 10))
	if b, r := sizes(); b != n || r != 10 {
		t.Errorf("after adding 10 to %d: base %d, recent %d; want %d, 10", n, b, r, n)
	}
	x.fold()
	x.add(testBuffers(n+10, 5))
	if b, r := sizes(); b != n+10 || r != 5 {
		t.Errorf("after a fold and 5 more: base %d, recent %d; want %d, 5", b, r, n+10)
	}
	n += 15
	x.add(testBuffers(n, recentMax))
	n += recentMax
	if b, r := sizes(); b != n || r != 0 {
		t.Errorf("after adding recentMax: base %d, recent %d; want %d, 0", b, r, n)
	}
	seen := map[string]int{}
	x.each(func(b *buffer) { seen[b.tag]++ })
	for i := range n {
		tag := fmt.Sprintf("t%06d", i)
		if b := x.get(tag); b == nil || b.tag != tag {
			t.Fatalf("get(%s) = %v", tag, b)
		}
		if seen[tag] != 1 {
			t.Fatalf("each visited %s %d times", tag, seen[tag])
		}
	}
	if x.get("t999999") != nil || x.len() != n {
		t.Errorf("get(absent) found one, or len %d", x.len())
	}
}

// TestBufferIndexNeverHidesATag: readers looking up tags added before they
// look always find them, while tags are added one at a time to a large
// index (recent copied, and folded every recentMax and every 500).
func TestBufferIndexNeverHidesATag(t *testing.T) {
	var x bufferIndex
	x.init()
	const n = foldAlways + 3*recentMax
	bs := testBuffers(0, n)
	x.add(bs[:foldAlways]) // large from the start: additions go to recent
	var added atomic.Int64
	added.Store(foldAlways)
	var wg sync.WaitGroup
	misses := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for k := 0; added.Load() < n; k++ {
				i := k % int(max(1, added.Load()))
				if added.Load() > int64(i) && x.get(bs[i].tag) == nil {
					select {
					case misses <- bs[i].tag:
					default:
					}
					return
				}
			}
		})
	}
	for i := foldAlways; i < n; i++ {
		x.add(bs[i : i+1])
		added.Add(1)
		if i%500 == 0 {
			x.fold()
		}
	}
	wg.Wait()
	close(misses)
	for tag := range misses {
		t.Errorf("get(%s) missed a tag added before", tag)
	}
}
