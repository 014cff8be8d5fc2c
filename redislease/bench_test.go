package redislease

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRenew measures one renewal: a round trip to Redis running the
// compare-and-set script. Parallel: each goroutine renews a lease of its
// own, as many holders sharing one Redis would.
func BenchmarkRenew(b *testing.B) {
	r := newRig(b)
	b.Run("serial", func(b *testing.B) {
		l := mustAcquire(b, r, request("bench", "token-serial", 1023))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := r.Renew(b.Context(), "bench", l.WorkerID, l.Token, time.Minute, int64(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			token := fmt.Sprint("token-", n.Add(1))
			l, err := r.Acquire(b.Context(), request("bench", token, 1023))
			if err != nil {
				b.Error(err)
				return
			}
			for i := int64(0); pb.Next(); i++ {
				if _, err := r.Renew(b.Context(), "bench", l.WorkerID, l.Token, time.Minute, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
