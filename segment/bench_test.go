package segment_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/idalloc/idalloc/segment"
)

// The physical floor Next is measured against: one atomic add.
func BenchmarkAtomicAdd(b *testing.B) {
	var n atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		n.Add(1)
	}
}

func BenchmarkAtomicAddParallel(b *testing.B) {
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Add(1)
		}
	})
}

func benchAllocator(b *testing.B) *segment.Allocator {
	st := newFakeStore(segment.Tag{AppTag: "bench", Step: 1_000_000})
	a := newAllocator(b, st, segment.Config{MaxStep: 100_000_000})
	if _, err := a.Next(context.Background(), "bench"); err != nil {
		b.Fatal(err)
	}
	return a
}

func BenchmarkNext(b *testing.B) {
	a := benchAllocator(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Next(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextParallel(b *testing.B) {
	a := benchAllocator(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.Next(ctx, "bench"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkNextN1000(b *testing.B) {
	a := benchAllocator(b)
	ctx := context.Background()
	dst := make([]int64, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := a.NextN(ctx, "bench", dst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkNextScrambled is Next on a scrambled tag: the sequential hot
// path plus one FF1 permutation (about 1.1 AES-based FF1 calls).
func BenchmarkNextScrambled(b *testing.B) {
	st := newFakeStore()
	a := newAllocator(b, st, segment.Config{MaxStep: 100_000_000})
	ctx := context.Background()
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "scr", Step: 1_000_000, Format: segment.FormatScrambled, Length: 12}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Next(ctx, "scr"); err != nil {
			b.Fatal(err)
		}
	}
}
