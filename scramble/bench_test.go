package scramble

import (
	"fmt"
	"sync/atomic"
	"testing"
)

func BenchmarkEncode(b *testing.B) {
	for _, bc := range []struct{ keyBytes, length int }{
		{32, 6}, {32, 10}, {32, 18}, {16, 10}, {24, 10},
	} {
		b.Run(fmt.Sprintf("AES-%d length %d", 8*bc.keyBytes, bc.length), func(b *testing.B) {
			p := mustNew(b, mustHex(b, testKey)[:bc.keyBytes], bc.length)
			b.ReportAllocs()
			var n uint64
			for b.Loop() {
				if _, err := p.Encode(n); err != nil {
					b.Fatal(err)
				}
				n = (n + 1) % p.Size()
			}
		})
	}
}

func BenchmarkEncodeParallel(b *testing.B) {
	p := mustNew(b, mustHex(b, testKey), 10)
	var next atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Encode(next.Add(1) % p.Size()); err != nil {
				b.Error(err) // not Fatal: this is not the benchmark's goroutine
				return
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	p := mustNew(b, mustHex(b, testKey), 10)
	id, err := p.Encode(12345)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Decode(id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFF1 is one FF1 call without the pool or the cycle-walk, to show
// what they cost on top.
func BenchmarkFF1(b *testing.B) {
	f := mustFF1(b, mustHex(b, testKey), 10, nil)
	var scratch [16]byte
	b.ReportAllocs()
	var x uint64
	for b.Loop() {
		x = f.encrypt(&scratch, x)
	}
}
