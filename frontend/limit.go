package frontend

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxConns is the cap of a zero Cap.Max, and the default of
// max_conns and resp_max_conns. An open connection costs a goroutine, its
// read and write buffers and a file descriptor, tens of KB in all; 10,000
// keeps the worst case to a few hundred MB and well inside the usual
// descriptor limits, while a load balancer or a fleet of keep-alive
// clients needs hundreds.
const DefaultMaxConns = 10_000

// refuseTimeout bounds a refusal: the write of its words, then the wait
// for the client to close its side.
const refuseTimeout = time.Second

// maxLingering bounds the refused connections waiting for their client to
// close its side (refuse). Past it a refused connection is closed at once:
// a flood of new connections must not hold more descriptors waiting than
// a tenth of the default cap.
const maxLingering = DefaultMaxConns / 10

// Cap is a front end's connection cap and what it answers over it.
type Cap struct {
	// Max is how many connections may be open at once; 0 means
	// DefaultMaxConns.
	Max int
	// Refusal is written, whole, to a connection refused at the cap: the
	// protocol's own words for "too many clients, retry".
	Refusal []byte
	// Metrics are the cap's figures; nil keeps them on metrics of its
	// own, registered nowhere.
	Metrics *Metrics
	// Log is told that the cap refused a connection, at most once a
	// minute; nil discards.
	Log *slog.Logger
}

// Limiter is a net.Listener that holds at most Cap.Max connections open,
// the one connection cap of every front end. Its connections are *Conn;
// the front end marks each idle or busy (SetIdle) as its protocol knows.
//
// At the cap, a new connection is accepted and the connection idle the
// longest (a client between requests or commands) is closed to make room,
// so that one client holding thousands of idle connections cannot keep
// others out for the idle timeout (API.md §5.8). Closing a connection
// between requests is what every server's idle timeout does, and clients
// reopen one and retry. When no connection is idle, every one busy with a
// request or command (or, for HTTP, yet to send its first), the new
// connection is answered Cap.Refusal in its protocol's words and closed:
// it learns at once why and may retry, rather than wait unserved in the
// accept queue for a slot it cannot see coming, past its own timeouts. A
// refusal is what Redis answers at maxclients, and a 503 with Retry-After
// sends an HTTP client or a load balancer to another instance. It is one
// behaviour for every front end, so that clients, load balancers and
// operators (the same metrics, the same log line) meet the cap the same
// way whichever protocol they speak.
//
// There is no per-client share. The peer address is the only identity a
// client cannot forge, and behind nginx (deploy/), a cloud load balancer
// or a NAT every client has the same one: a per-address cap would cut off
// the proxy. And with idle connections closed first, what one address can
// still hold is connections in a request, which the front ends' timeouts
// bound.
type Limiter struct {
	net.Listener
	max     int
	refusal []byte
	m       *Metrics
	log     *slog.Logger

	// idleSeq numbers the moments connections go idle, so the longest
	// idle is the one with the lowest number.
	idleSeq     atomic.Uint64
	lingering   atomic.Int32 // refused connections waiting for their client's close
	lastRefusal atomic.Int64 // UnixNano of the last refusal logged

	mu    sync.Mutex
	conns map[*Conn]struct{}
}

// Limit caps the connections accepted from ln.
func Limit(ln net.Listener, c Cap) *Limiter {
	l := &Limiter{
		Listener: ln, max: c.Max, refusal: c.Refusal, m: c.Metrics, log: c.Log,
		conns: make(map[*Conn]struct{}),
	}
	if l.max == 0 {
		l.max = DefaultMaxConns
	}
	if l.m == nil {
		l.m = newMetrics("", "max_conns")
	}
	l.m.limiter.Store(l)
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// Accept returns the next connection admitted under the cap, refusing
// those that find no room. It accepts before making room, so an idle
// connection is closed only for a client that is there.
func (l *Limiter) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &Conn{Conn: nc, l: l}
		if l.admit(c) {
			return c, nil
		}
		l.refuse(nc)
	}
}

// admit adds c to the open connections if there is room, closing the
// longest-idle connection while there is none; with none idle it reports
// false.
func (l *Limiter) admit(c *Conn) bool {
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.conns[c] = struct{}{}
			l.mu.Unlock()
			return true
		}
		oldest, seq := l.longestIdle()
		l.mu.Unlock()
		if oldest == nil {
			return false
		}
		// Still idle since it was seen: closed for the newcomer. Had it
		// gone busy meanwhile, the CAS fails and the search starts over.
		if oldest.idleSince.CompareAndSwap(seq, 0) {
			l.m.idleClosed.Inc()
			_ = oldest.Close()
		}
	}
}

// longestIdle returns the open connection idle the longest and the number
// of the moment it went idle, or nil. It looks at every open connection,
// so it runs only at the cap: the cost of knowing who is idle is then
// paid there, not by each request. l.mu is held.
func (l *Limiter) longestIdle() (*Conn, uint64) {
	var oldest *Conn
	var min uint64
	for c := range l.conns {
		if seq := c.idleSince.Load(); seq != 0 && (oldest == nil || seq < min) {
			oldest, min = c, seq
		}
	}
	return oldest, min
}

// refuse answers nc in its protocol's words and closes it. Closing a
// socket with input unread sends a reset, which can reach the client
// before it has read the answer and discard it, and a client has usually
// sent its request or first command by then. So the write side is closed
// first (the answer ends with it) and what the client sends is read and
// dropped until it closes its side or refuseTimeout passes: HTTP's
// lingering close (RFC 9112 §9.6), in a goroutine so that Accept goes on.
func (l *Limiter) refuse(nc net.Conn) {
	l.m.refused.Inc()
	now := time.Now()
	if last := l.lastRefusal.Load(); now.UnixNano()-last > int64(time.Minute) && l.lastRefusal.CompareAndSwap(last, now.UnixNano()) {
		l.log.Warn("connection refused: "+l.m.capKey+" reached and no connection idle to close", l.m.capKey, l.max)
	}
	_ = nc.SetDeadline(now.Add(refuseTimeout))
	_, err := nc.Write(l.refusal)
	if cw, ok := nc.(interface{ CloseWrite() error }); ok && err == nil {
		if l.lingering.Add(1) <= maxLingering {
			_ = cw.CloseWrite()
			go func() {
				defer l.lingering.Add(-1)
				_, _ = io.Copy(io.Discard, nc) // until the client's close or the deadline
				_ = nc.Close()
			}()
			return
		}
		l.lingering.Add(-1)
	}
	_ = nc.Close()
}

// counts returns the number of connections open, and of those idle. It
// looks at every connection: it is for the metrics' scrape.
func (l *Limiter) counts() (open, idle int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if c.idleSince.Load() != 0 {
			idle++
		}
	}
	return len(l.conns), idle
}

// CloseAll closes every open connection: how a front end cuts the
// connections that outlive their share of the stop.
func (l *Limiter) CloseAll() {
	l.mu.Lock()
	conns := make([]*Conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Conn is a connection a Limiter admitted. It gives its slot back when
// closed, once however often Close is called.
type Conn struct {
	net.Conn
	l    *Limiter
	once sync.Once

	// idleSince is the number of the moment it went idle (Limiter's
	// idleSeq), 0 while it is new, busy, or closing.
	idleSince atomic.Uint64
}

// Close closes the connection and frees its slot.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return err
}

// SetIdle marks c idle (a client between requests or commands, with no
// answer owed: a connection the Limiter may close for a newcomer) or
// busy. A connection starts busy. It is on every request's path, so it
// takes no lock: one atomic store, and an atomic add to go idle. A c the
// Limiter did not admit is ignored.
//
// A connection closed as idle may have a request arriving on it: the
// same race as any idle timeout's, which clients answer by retrying on a
// new connection (RFC 9112 §9.3.1), and the Limiter only closes a
// connection still marked idle (a compare-and-swap), so one marked busy
// first is kept.
func SetIdle(c net.Conn, idle bool) {
	lc, ok := c.(*Conn)
	if !ok {
		return
	}
	if !idle {
		lc.idleSince.Store(0)
		return
	}
	lc.idleSince.Store(lc.l.idleSeq.Add(1))
}

// Metrics are a Limiter's figures, named for its front end
// (idalloc_<subsystem>_…):
//
//	idalloc_<subsystem>_connections                     connections open, at most the cap
//	idalloc_<subsystem>_idle_connections                those idle: the room a newcomer finds at the cap
//	idalloc_<subsystem>_idle_connections_closed_total  idle connections closed to make room at the cap
//	idalloc_<subsystem>_connections_refused_total       connections refused at the cap, none idle
//
// The two gauges are read at scrape time from the Limiter last made with
// the Metrics, so that marking a connection idle costs no more than its
// atomic store.
type Metrics struct {
	limiter    atomic.Pointer[Limiter]
	idleClosed prometheus.Counter
	refused    prometheus.Counter
	collectors []prometheus.Collector
	capKey     string // the cap's config key, for help texts and the log
}

// NewMetrics makes a front end's connection figures under subsystem
// ("http", "resp") and registers them on reg; capKey names the setting of
// the cap ("max_conns"). It fails only when reg holds those names already.
func NewMetrics(reg prometheus.Registerer, subsystem, capKey string) (*Metrics, error) {
	m := newMetrics(subsystem, capKey)
	for _, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func newMetrics(subsystem, capKey string) *Metrics {
	m := &Metrics{capKey: capKey}
	gauge := func(name, help string, read func(open, idle int) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idalloc", Subsystem: subsystem, Name: name, Help: help,
		}, func() float64 {
			if l := m.limiter.Load(); l != nil {
				return float64(read(l.counts()))
			}
			return 0
		})
	}
	m.idleClosed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "idalloc", Subsystem: subsystem, Name: "idle_connections_closed_total",
		Help: "Idle connections (between requests or commands) closed to make room for a new one at " + capKey + ".",
	})
	m.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "idalloc", Subsystem: subsystem, Name: "connections_refused_total",
		Help: "New connections answered \"too many clients\" and closed at " + capKey + ", none being idle.",
	})
	m.collectors = []prometheus.Collector{
		gauge("connections", "Connections open, at most "+capKey+".", func(open, _ int) int { return open }),
		gauge("idle_connections", "Open connections idle (between requests or commands): those a new one may replace at "+capKey+".",
			func(_, idle int) int { return idle }),
		m.idleClosed, m.refused,
	}
	return m
}
