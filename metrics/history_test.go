package metrics

import (
	"fmt"
	"iter"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// stepZero is a step's start: Unix time 1,700,000,000 s is a multiple of
// 10 s.
var stepZero = time.Unix(1_700_000_000, 0)

// historyRig is an Observer over the fake's tags on a clock the test
// moves, starting at stepZero.
func historyRig(f *fakeSegments) (*Observer, *testclock.Clock) {
	c := testclock.New(stepZero)
	o := &Observer{}
	o.activity.watch(f, c.Now)
	return o, c
}

// points are a History's IDs per step, rounded, and its refills, oldest
// first, for comparing with what a test wants.
type points struct {
	ids     [HistoryPoints]int64
	refills [HistoryPoints]uint16
}

func pointsOf(h History) points {
	var p points
	for i := range HistoryPoints {
		p.ids[i] = int64(h.IDs[i] + 0.5)
	}
	p.refills = h.Refills
	return p
}

// last puts vals at the end of a series of HistoryPoints, the newest
// last, zeros before.
func last[T int64 | uint16](vals ...T) [HistoryPoints]T {
	var out [HistoryPoints]T
	copy(out[HistoryPoints-len(vals):], vals)
	return out
}

// TestHistory: a tag's steps, sampled as a page polls (every second), as
// a scrape does (every 30 s, the IDs spread over the steps between), and
// across a wall clock set back; a tag that issued nothing has none, and
// one idle for the whole window loses its ring.
func TestHistory(t *testing.T) {
	type tick struct {
		after   time.Duration // since the tick before
		issued  int64         // the count then
		refills int64
	}
	every := func(n int, d time.Duration, perTick int64, from int64) []tick {
		var ts []tick
		for i := range n {
			ts = append(ts, tick{after: d, issued: from + int64(i+1)*perTick})
		}
		return ts
	}
	for _, c := range []struct {
		name  string
		ticks []tick
		want  points
		none  bool // no History: nothing in the window
	}{
		{
			name:  "every second",
			ticks: append(every(20, time.Second, 5, 0), tick{time.Second, 105, 1}, tick{9 * time.Second, 105, 1}),
			// 5 IDs a second for 20 s: two steps of 50, then 5 and a
			// refill in the third.
			want: points{ids: last[int64](50, 50, 5), refills: last[uint16](0, 0, 1)},
		},
		{
			name:  "every 30 s, spread",
			ticks: []tick{{30 * time.Second, 300, 2}, {30 * time.Second, 300, 2}, {30 * time.Second, 900, 3}, {time.Second, 900, 3}},
			// The first 300 over three steps, the next 600 over the three
			// before the sample at 90 s. Refills are in the step of the
			// sample that saw them: 2 at 30 s, the fourth step; the one
			// seen at 90 s is in the step under way, not yet shown.
			want: points{ids: last[int64](100, 100, 100, 0, 0, 0, 200, 200, 200),
				refills: last[uint16](0, 0, 0, 2, 0, 0, 0, 0, 0)},
		},
		{
			name:  "a gap longer than the window",
			ticks: []tick{{10 * time.Minute, 6000, 0}, {time.Second, 6000, 0}},
			// 6,000 over 60 steps: the 30 in the window hold 100 each.
			want: points{ids: last[int64](100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100,
				100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100)},
		},
		{name: "never issued", ticks: every(40, time.Second, 0, 0), none: true},
		{
			name:  "idle for the whole window",
			ticks: []tick{{time.Second, 7, 1}, {HistoryPoints*HistoryStep + HistoryStep, 7, 1}, {time.Second, 7, 1}},
			none:  true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeSegments("t")
			o, clock := historyRig(f)
			for _, tk := range c.ticks {
				clock.Add(tk.after)
				f.setIssued("t", tk.issued)
				f.setRefills("t", tk.refills)
				o.HistoryEnd() // a sample
			}
			end := o.HistoryEnd()
			if want := stepStart(stepOf(clock.Now())).UTC(); !end.Equal(want) {
				t.Fatalf("HistoryEnd = %v, want the start of the step now, %v", end, want)
			}
			h, ok := o.History("t", end)
			if ok == c.none {
				t.Fatalf("History: ok = %v, want %v (got %+v)", ok, !c.none, pointsOf(h))
			}
			if !c.none {
				if got := pointsOf(h); got != c.want {
					t.Errorf("got IDs %v refills %v,\nwant IDs %v refills %v", got.ids, got.refills, c.want.ids, c.want.refills)
				}
			}
			if c.none && o.activity.tags["t"].hist != nil {
				t.Errorf("the tag holds a ring with nothing in the window")
			}
		})
	}
}

// TestHistoryClockSetBack: IDs issued after the wall clock went back are
// counted in the newest step, neither lost nor written into the past.
func TestHistoryClockSetBack(t *testing.T) {
	var h history
	h.add(stepZero, stepZero.Add(25*time.Second), 10, 0)
	h.add(stepZero.Add(4*time.Second), stepZero.Add(5*time.Second), 20, 1)
	var out History
	want := points{ids: last[int64](4, 4, 22), refills: last[uint16](0, 0, 1)}
	if ok := h.before(stepOf(stepZero)+3, &out); !ok || pointsOf(out) != want {
		got := pointsOf(out)
		t.Errorf("got IDs %v refills %v (ok %v), want IDs %v refills %v", got.ids, got.refills, ok, want.ids, want.refills)
	}
}

// TestHistoryUnknown: no History before Watch, of a tag never seen, or
// for a zero end; reading one allocates nothing (GET /status reads a
// page of them a second).
func TestHistoryUnknown(t *testing.T) {
	if end := (&Observer{}).HistoryEnd(); !end.IsZero() {
		t.Errorf("HistoryEnd before Watch = %v, want zero", end)
	}
	f := newFakeSegments("t")
	o, clock := historyRig(f)
	clock.Add(time.Second)
	f.setIssued("t", 3)
	clock.Add(10 * time.Second)
	end := o.HistoryEnd()
	for _, c := range []struct {
		tag string
		end time.Time
	}{{"ghost", end}, {"t", time.Time{}}} {
		if _, ok := o.History(c.tag, c.end); ok {
			t.Errorf("History(%q, %v): ok, want none", c.tag, c.end)
		}
	}
	if _, ok := o.History("t", end); !ok {
		t.Fatalf("History(t): none, want its 3 IDs")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = o.History("t", end) }); n != 0 {
		t.Errorf("History: %v allocations, want 0", n)
	}
}

// TestHistoryMemory measures what the histories cost: every one of
// 20,000 tags with IDs in the window holds a ring; tags idle for the
// window hold none. It logs bytes per tag and bounds them.
func TestHistoryMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the 20,000-tag measurement")
	}
	const n = 20_000
	f := newFakeSegments()
	for i := range n {
		f.setIssued(fmt.Sprintf("tenant-%06d", i), 0)
	}
	o, clock := historyRig(f)
	o.HistoryEnd()
	before := heapInuse()
	for i := range n {
		f.setIssued(fmt.Sprintf("tenant-%06d", i), 1)
	}
	clock.Add(time.Second)
	o.HistoryEnd()
	active := heapInuse()
	clock.Add(HistoryPoints*HistoryStep + HistoryStep)
	o.HistoryEnd()
	idle := heapInuse()
	perTag := float64(active-before) / n
	t.Logf("%d tags: %.0f B/tag of rings while they issue; %.0f B/tag once idle for the window", n, perTag, float64(int64(idle)-int64(before))/n)
	if perTag > 256 {
		t.Errorf("a tag's history costs %.0f bytes, want at most 256", perTag)
	}
	for tag, a := range o.activity.tags {
		if a.hist != nil {
			t.Fatalf("%s, idle for the window, still holds a ring", tag)
		}
	}
	runtime.KeepAlive(o)
}

// heapInuse is the heap in use after two collections.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// statsSlice is an allocator's stats as a slice the benchmark changes in
// place: a pass over it costs the sample, not the fake.
type statsSlice []segment.TagStats

func (s *statsSlice) AllStats() iter.Seq[segment.TagStats] { return slices.Values(*s) }

// BenchmarkSample is one pass of the rates and histories over 100,000
// tags: idle ones (nothing issued since the pass before: a rate to decay,
// no ring to touch) and busy ones (each issued an ID since).
func BenchmarkSample(b *testing.B) {
	for _, busy := range []bool{false, true} {
		b.Run(fmt.Sprintf("busy=%v", busy), func(b *testing.B) {
			stats := make(statsSlice, 100_000)
			for i := range stats {
				stats[i] = segment.TagStats{AppTag: fmt.Sprintf("tenant-%06d", i), Buffered: 42}
			}
			clock := testclock.New(stepZero)
			a := &activity{}
			a.watch(&stats, clock.Now)
			b.ReportAllocs()
			for b.Loop() {
				clock.Add(time.Second)
				if busy {
					for i := range stats {
						stats[i].Issued++
					}
				}
				a.mu.Lock()
				a.sampleLocked()
				a.mu.Unlock()
			}
		})
	}
}
