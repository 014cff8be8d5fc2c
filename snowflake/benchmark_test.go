package snowflake

import (
	"testing"

	"github.com/idalloc/idalloc/internal/testclock"
)

// The ceiling is 4096 IDs per ms per worker, 4,096,000 per second; a random
// start averaging 49.5 leaves 4046.5 per ms. These run on the real clock, so
// ids/s shows how close the waits at millisecond ends come to that ceiling.

func newBenchGenerator(b *testing.B, s Settings) *Generator {
	b.Helper()
	g, err := New(s)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkNext(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    Settings
	}{
		{"random start", Settings{WorkerID: 1}},
		{"start at 0", Settings{WorkerID: 1, DisableRandomStart: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := newBenchGenerator(b, bc.s)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Next(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
		})
	}
}

func BenchmarkNextParallel(b *testing.B) {
	g := newBenchGenerator(b, Settings{WorkerID: 1})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := g.Next(); err != nil {
				b.Error(err) // not Fatal: this is not the test's goroutine
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
}

func BenchmarkNextN(b *testing.B) {
	const batch = 1000
	g := newBenchGenerator(b, Settings{WorkerID: 1})
	dst := make([]int64, batch)
	b.ReportAllocs()
	for b.Loop() {
		if err := g.NextN(dst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*batch/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkNextFakeClock measures the code path alone, without the ceiling
// the clock imposes.
func BenchmarkNextFakeClock(b *testing.B) {
	c := testclock.New(t0)
	g := newFakeGenerator(b, c, Settings{WorkerID: 1})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
