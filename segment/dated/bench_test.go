package dated_test

import (
	"sync/atomic"
	"testing"

	"github.com/idalloc/idalloc/segment/dated"
)

func BenchmarkID(b *testing.B) {
	f := mustNew(b, dated.Settings{})
	k := dated.Key{Stamp: 20261126}
	b.ReportAllocs()
	var seq int64
	for b.Loop() {
		seq = seq%f.MaxSeq() + 1
		if _, err := f.ID(k, seq); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIDParallel(b *testing.B) {
	f := mustNew(b, dated.Settings{})
	k := dated.Key{Stamp: 20261126}
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.ID(k, next.Add(1)%f.MaxSeq()+1); err != nil {
				b.Error(err) // not Fatal: this is not the benchmark's goroutine
				return
			}
		}
	})
}

func BenchmarkAppendText(b *testing.B) {
	f := mustNew(b, dated.Settings{Prefix: "ORD", Separator: "-"})
	k := dated.Key{Stamp: 20261126}
	buf := make([]byte, 0, dated.MaxTextLength)
	b.ReportAllocs()
	var seq int64
	for b.Loop() {
		seq = seq%f.MaxSeq() + 1
		var err error
		if buf, err = f.AppendText(buf[:0], k, seq); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkText(b *testing.B) {
	f := mustNew(b, dated.Settings{Prefix: "ORD", Separator: "-"})
	k := dated.Key{Stamp: 20261126}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Text(k, 123); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOf is the cost at a period boundary, not per ID: the
// allocator keeps the Key and compares instants with its End.
func BenchmarkOf(b *testing.B) {
	for _, zone := range []string{"UTC", "Europe/Berlin"} {
		b.Run(zone, func(b *testing.B) {
			f := mustNew(b, dated.Settings{TimeZone: zone})
			t0 := at(2026, 10, 25, 12, 0, 0)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Of(t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkContains(b *testing.B) {
	f := mustNew(b, dated.Settings{})
	t0 := at(2026, 11, 26, 12, 0, 0)
	k, err := f.Of(t0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !k.Contains(t0) {
			b.Fatal("not contained")
		}
	}
}
