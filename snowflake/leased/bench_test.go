package leased_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// servingSource returns a Source whose keeper holds a session, closed at
// cleanup. now and sleep nil mean the real clock, as a server runs.
func servingSource(tb testing.TB, layout snowflake.Layout, now func() time.Time, sleep func(time.Duration)) *leased.Source {
	tb.Helper()
	svc := newService(tb, workerlease.NewMemoryStore(nil), workerlease.Config{Now: now})
	k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc, Now: now})
	if err != nil {
		tb.Fatalf("NewKeeper: %v", err)
	}
	src, err := leased.New(k, layout, snowflake.Settings{Now: now, Sleep: sleep})
	if err != nil {
		tb.Fatalf("leased.New: %v", err)
	}
	h := &holder{k, src}
	k.Start(tb.Context())
	tb.Cleanup(func() { h.close(tb) })
	for deadline := time.Now().Add(10 * time.Second); k.Session() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("no session within 10s")
		}
	}
	return src
}

// TestSourceNextDoesNotAllocate: with a session current, Next is the
// generator's Next plus two atomic loads and the fence: no allocation.
func TestSourceNextDoesNotAllocate(t *testing.T) {
	src := servingSource(t, defaultLayout(t), nil, nil)
	if _, err := src.Next(); err != nil { // builds the session's generator
		t.Fatalf("Next: %v", err)
	}
	var err error
	if got := testing.AllocsPerRun(1000, func() { _, err = src.Next() }); got != 0 {
		t.Errorf("Next allocates %v times per call, want 0", got)
	}
	if err != nil {
		t.Errorf("Next: %v", err)
	}
}

// steppingClock moves 10ns on every reading, and Sleep moves it at once,
// so that a benchmark on it measures the Source rather than the wait for
// the next millisecond: on the real clock, 4096 IDs per millisecond (about
// 244ns an ID) is the default layout's ceiling. It runs slower than the
// real clock (an ID costs more than 10ns), so the fence, which counts its
// time, never closes before the renewals, which count real time, come.
type steppingClock struct{ ns atomic.Int64 }

func (c *steppingClock) Now() time.Time        { return time.Unix(0, c.ns.Add(10)) }
func (c *steppingClock) Sleep(d time.Duration) { c.ns.Add(int64(d)) }

func BenchmarkSourceNext(b *testing.B) {
	var fake steppingClock
	fake.ns.Store(time.Now().UnixNano())
	// One worker bit leaves 21 for the sequence, so the stepping clock,
	// 10^5 readings a millisecond, never runs a millisecond's sequence out.
	wide, err := snowflake.NewLayout(time.Time{}, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, clock := range []struct {
		name   string
		layout snowflake.Layout
		now    func() time.Time
		sleep  func(time.Duration)
	}{
		{"real clock", defaultLayout(b), nil, nil},
		{"stepping clock", wide, fake.Now, fake.Sleep},
	} {
		src := servingSource(b, clock.layout, clock.now, clock.sleep)
		b.Run(clock.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := src.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(clock.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := src.Next(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
