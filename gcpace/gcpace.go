// Package gcpace sets the garbage collector's pace (GOGC) from the live
// heap: a process whose live heap is small collects a quarter as often as
// at Go's default, one whose live heap is large as often as at the default.
package gcpace

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The collector's pace (GOGC) follows the live heap. Most instances' live
// heap is a few MB, and at Go's default of 100 the collector runs every
// few MB allocated: over 60 times a second at 80k req/s on one core,
// about 4% of the CPU and a pause in every request in flight. At 400 it
// runs a quarter as often for ~12 MB more memory. But 400 lets any heap
// grow to five times what is live between collections, and a heap that
// holds 100,000 tags (some 50 MB, docs/api.md §13) would take 250 MB, 2.5 KB a
// tag. So the pace is what allows about gcHeadroom of growth: 400 while
// the live heap is under a quarter of it, down to Go's 100 from
// gcHeadroom on, where a collection comes only every 12 MB allocated or
// more anyway.
const (
	gcPercent  = 400      // the pace of a small live heap, and the most
	gcHeadroom = 12 << 20 // the growth between collections aimed for
	gcRecheck  = 5 * time.Second
)

// gcPercentFor is the pace for a live heap of live bytes:
// 100·gcHeadroom/live, from 100 to gcPercent, in steps of 50 so that it
// changes seldom.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcPercent
	}
	return max(100, min(gcPercent, int(100*gcHeadroom/live)/50*50))
}

// Start sets the collector's pace, and sets it again every gcRecheck from
// the live heap the last collection found, until the stop it returns is
// called, which waits for its goroutine to end. It is for when GOGC is not
// set: GOGC wins as usual.
func Start() (stop func()) {
	cur := gcPercent
	debug.SetGCPercent(cur)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(gcRecheck)
		defer t.Stop()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(live)
			if live[0].Value.Kind() != metrics.KindUint64 {
				return // a runtime without the metric: the pace stays
			}
			if p := gcPercentFor(live[0].Value.Uint64()); p != cur {
				debug.SetGCPercent(p)
				cur = p
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
