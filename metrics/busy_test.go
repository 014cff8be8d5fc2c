package metrics

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

// clockedActivity is an activity over the fake's tags on a clock the test
// moves.
func clockedActivity(f *fakeSegments) (*activity, *testclock.Clock) {
	c := testclock.New(time.Now())
	a := &activity{}
	a.watch(f, c.Now)
	return a, c
}

// TestActivityRate: a tag's rate follows a steady pace within a window,
// and falls away once the tag is idle.
func TestActivityRate(t *testing.T) {
	f := newFakeSegments("steady", "idle")
	f.setIssued("steady", 0)
	f.setIssued("idle", 0)
	a, now := clockedActivity(f)
	rate := func() float64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.sampleLocked()
		return a.tags["steady"].rate
	}
	var issued int64
	for range 60 { // 50 IDs a second for a minute, sampled each second
		now.Add(time.Second)
		issued += 50
		f.setIssued("steady", issued)
		rate()
	}
	if r := rate(); r < 49.5 || r > 50.5 {
		t.Errorf("after a minute at 50 IDs/s the rate is %.2f, want 50", r)
	}
	now.Add(3 * rateWindow) // idle since, in one sample
	if r := rate(); r > 50*0.05 {
		t.Errorf("idle for three windows, the rate is %.2f, want under 5%% of 50", r)
	}
	if r := a.tags["idle"].rate; r != 0 {
		t.Errorf("a tag that never issued has rate %v, want 0", r)
	}
}

// TestActivitySampleGap: however often asked, a pass over the tags is
// taken at most once per minSampleGap.
func TestActivitySampleGap(t *testing.T) {
	f := newFakeSegments("t")
	a, now := clockedActivity(f)
	if got := a.totalBuffered(); got != 42 {
		t.Fatalf("buffered %d, want 42", got)
	}
	first := a.at
	f.setIssued("u", 0)
	now.Add(minSampleGap - time.Nanosecond)
	if got := a.totalBuffered(); got != 42 || a.at != first {
		t.Errorf("under the gap: buffered %d, sampled at %v; want 42 from the first sample at %v", got, a.at, first)
	}
	now.Add(time.Nanosecond)
	if got := a.totalBuffered(); got != 84 {
		t.Errorf("at the gap: buffered %d, want 84 from a new sample", got)
	}
}

// TestTopK: the heap keeps the k best of any offers, whatever their order.
func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ n, k int }{{0, 3}, {2, 3}, {3, 3}, {100, 1}, {100, 10}, {1000, 100}, {50, 0}} {
		var all []busy
		for i := range c.n {
			all = append(all, busy{tag: fmt.Sprintf("t%04d", i), rate: float64(r.IntN(20))}) // many ties
		}
		top := &topK{k: c.k, worse: func(x, y busy) bool { return busier(x, y) > 0 }}
		for _, i := range r.Perm(c.n) {
			top.offer(all[i])
		}
		want := slices.Clone(all)
		slices.SortFunc(want, busier)
		want = want[:min(c.k, c.n)]
		got := top.sorted(busier)
		if !slices.EqualFunc(got, want, func(x, y busy) bool { return x.tag == y.tag }) {
			t.Errorf("%d offers, k %d: kept %v, want %v", c.n, c.k, names(got), names(want))
		}
	}
}

func names(bs []busy) string {
	var s []string
	for _, b := range bs {
		s = append(s, b.tag)
	}
	return strings.Join(s, " ")
}
