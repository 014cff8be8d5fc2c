package resp

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxPendingTotal is the default of Config.MaxPendingTotal: four
// connections at DefaultMaxPending. Clients that read hold next to nothing
// waiting (their answers drain as they come), so it is spent by clients
// that do not read. Those answers are garbage once written or dropped, and
// with main's GOGC of 400 the heap grows to about five times what is live
// before a collection: the process's RSS is about 20 MB + 5 × (this budget
// + about 230 KB of buffers per busy connection, fitted to the figures
// below). 60 clients that pipeline and never read reached 560 MB with
// MaxPending alone, 410 MB with a budget of 64 MiB and at most 250 MB with
// this one (the contract asks for under 300 MB).
const DefaultMaxPendingTotal = 32 << 20

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
