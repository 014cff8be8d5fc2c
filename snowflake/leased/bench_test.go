package leased_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// servingSource returns a Source on base whose keeper holds a session,
// closed at cleanup. base.Now and base.Sleep nil mean the real clock, as a
// server runs; the keeper shares base.Now.
func servingSource(tb testing.TB, layout snowflake.Layout, base snowflake.Settings) *leased.Source {
	tb.Helper()
	svc := newService(tb, workerlease.NewMemoryStore(nil), workerlease.Config{Now: base.Now})
	k, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc, Now: base.Now})
	if err != nil {
		tb.Fatalf("NewKeeper: %v", err)
	}
	src, err := leased.New(k, layout, base)
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
// generator's Next plus two atomic loads, the fence and the Observer: no
// allocation.
func TestSourceNextDoesNotAllocate(t *testing.T) {
	var obs countingObserver
	src := servingSource(t, defaultLayout(t), snowflake.Settings{Observer: &obs})
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
	if got := obs.issued.Load(); got != 1002 {
		t.Errorf("the Observer counted %d IDs, want 1002", got)
	}
}

// countingObserver is a snowflake.Observer as the metrics are: atomics.
type countingObserver struct{ issued, drifts atomic.Int64 }

func (o *countingObserver) Issued(n int) { o.issued.Add(int64(n)) }
func (o *countingObserver) Drift(snowflake.DriftOutcome, time.Duration) {
	o.drifts.Add(1)
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
		base   snowflake.Settings
	}{
		{"real clock", defaultLayout(b), snowflake.Settings{}},
		{"stepping clock", wide, snowflake.Settings{Now: fake.Now, Sleep: fake.Sleep}},
		// As a server runs it: the metrics observe every ID.
		{"stepping clock observed", wide, snowflake.Settings{Now: fake.Now, Sleep: fake.Sleep, Observer: &countingObserver{}}},
	} {
		src := servingSource(b, clock.layout, clock.base)
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
