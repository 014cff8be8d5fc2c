package resp

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// errOutputTotal ends the connection holding the most answers waiting when
// another answer would take the total across connections past
// Config.MaxPendingTotal.
var errOutputTotal = errors.New("resp: answers waiting across connections passed resp_max_pending_total: the connection holding the most was closed")

// budget bounds the answers waiting for their clients across every
// connection of a Server (MaxPendingTotal), as MaxPending bounds one
// connection's: without it, MaxConns connections at MaxPending each are
// 80 GB at the defaults. When an answer would take the total past max,
// the connection holding the most is closed, its answers dropped, and the
// close counted, as Redis's maxmemory-clients evicts the client using the
// most memory. That is not always the connection adding: a client that
// reads can be the one whose answer does not fit, for a moment, while the
// budget is held by clients that do not; cutting the adder would let a few
// of those shut out everyone whose socket is briefly full.
//
// Only answers the socket did not take at once are counted (output.queue),
// so a connection whose client keeps up never touches it.
type budget struct {
	max   int64
	total atomic.Int64 // bytes waiting, across connections
	cut   prometheus.Counter
	// largest returns the output of the open connection holding the most
	// answers waiting, or nil if none holds any.
	largest func() *output
}

// take counts n more bytes waiting, or returns false, counting nothing,
// if that would pass max. It is exact (a compare-and-swap, not an add
// undone), so concurrent adders near max do not evict for nothing.
func (b *budget) take(n int) bool {
	for {
		t := b.total.Load()
		if t+int64(n) > b.max {
			return false
		}
		if b.total.CompareAndSwap(t, t+int64(n)) {
			return true
		}
	}
}

// release gives back n bytes: they were written, or dropped.
func (b *budget) release(n int64) { b.total.Add(-n) }

// evict closes the connection holding the most answers waiting (perhaps
// the caller's), which gives its bytes back at once. The caller holds no
// output's lock, so locking the victim's cannot deadlock with a victim
// evicting it in turn. A connection whose answers were all written since
// it was found is spared; the caller tries again.
func (b *budget) evict() {
	v := b.largest()
	if v == nil {
		return // every backlog was written meanwhile
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pending.Load() > 0 && v.stop(errOutputTotal) {
		b.cut.Inc()
	}
}
