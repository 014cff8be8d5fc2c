package segment_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/alloctest"
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
	a := alloctest.New(b, st, segment.Config{MaxStep: 100_000_000})
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
	a := alloctest.New(b, st, segment.Config{MaxStep: 100_000_000})
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

// benchDated makes an allocator on the real clock with a dated tag of
// day periods and 10-digit sequences (10^10 numbers a day, so that no
// run spends a period) and takes its first ID.
func benchDated(b *testing.B, n segment.NewTag) *segment.Allocator {
	st := newPeriodStore(nil)
	a := alloctest.New(b, st, segment.Config{MaxStep: 100_000_000})
	n.Format, n.Step, n.Length = segment.FormatDated, 1_000_000, 10
	if _, err := a.CreateTag(context.Background(), n); err != nil {
		b.Fatal(err)
	}
	if _, err := a.NextText(context.Background(), n.AppTag); err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkNextDated is Next on a numeric dated tag: the sequential hot
// path plus a reading of the clock and the period's bounds.
func BenchmarkNextDated(b *testing.B) {
	a := benchDated(b, segment.NewTag{AppTag: "dated"})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Next(ctx, "dated"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextDatedParallel(b *testing.B) {
	a := benchDated(b, segment.NewTag{AppTag: "dated"})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.Next(ctx, "dated"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppendNextText is a text ID (ORD-20261126-0000000123) into a
// buffer with room.
func BenchmarkAppendNextText(b *testing.B) {
	a := benchDated(b, segment.NewTag{AppTag: "ord", Prefix: "ORD", Separator: "-"})
	ctx := context.Background()
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = a.AppendNextText(ctx, "ord", buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimeNow is the clock reading every dated claim makes: the floor
// a dated tag's Next adds to a sequential one's.
func BenchmarkTimeNow(b *testing.B) {
	var n int64
	b.ReportAllocs()
	for b.Loop() {
		n += time.Now().UnixNano()
	}
	_ = n
}
