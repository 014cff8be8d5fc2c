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

// DefaultMaxStreams is the default of grpc_max_streams: the calls one
// gRPC connection may have in progress at once, HTTP/2's customary 100.
// A client past it waits for a stream of its own connection; other
// connections are not held back.
const DefaultMaxStreams = 100

// The defaults of a front end's command and answer bounds (RESP's
// resp_command_timeout, resp_max_pending and resp_max_pending_total),
// here so that the config's defaults and the front end's are one value.
const (
	// DefaultCommandTimeout bounds a command from its first bytes to its
	// last, as net/http's header timeout bounds a request's headers: a
	// RESP command is at most 256 KiB, which 5 s carries at 420 kbit/s.
	DefaultCommandTimeout = 5 * time.Second
	// DefaultMaxPending caps the bytes of answers one connection may have
	// waiting for its client to read them, like Redis's
	// client-output-buffer-limit: far above what a client that reads its
	// answers leaves waiting (an answer of IDS or SNOWFLAKE with a count of
	// 1,000 is 26 KB), so that only clients that do not read are cut.
	DefaultMaxPending = 8 << 20
	// DefaultMaxPendingTotal caps those bytes across connections: four
	// connections at DefaultMaxPending. Clients that read hold next to
	// nothing waiting (their answers drain as they come), so it is spent
	// by clients that do not read. Those answers are garbage once written
	// or dropped, and with main's GOGC of 400 the heap grows to about five
	// times what is live before a collection: the process's RSS is about
	// 20 MB + 5 × (this budget + about 230 KB of buffers per busy
	// connection, fitted to the figures below). 60 clients that pipeline
	// and never read reached 560 MB with a per-connection cap alone, 410 MB
	// with a budget of 64 MiB and at most 250 MB with this one (the
	// contract asks for under 300 MB).
	DefaultMaxPendingTotal = 32 << 20
)

// refuseTimeout bounds a refusal: the write of its words, then the wait
// for the client to close its side.
const refuseTimeout = time.Second

// stuckAfter is how long a request's headers or a command may be
// incomplete before the connection counts as stuck, closed before the idle
// ones at the cap. A client sends a request or a command in one write,
// which arrives whole within a round trip of its first bytes, and round
// trips are shorter. A slower client is closed first at the cap only,
// where slow senders are the likelier attack and an idle client, the
// alternative, is the one that would lose nothing.
const stuckAfter = 250 * time.Millisecond

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
// the front end marks each idle or busy (SetIdle), or partway through
// receiving a request or command (Begin), as its protocol knows.
//
// At the cap, a new connection is accepted and one that owes its client
// nothing is closed to make room, so that one client holding thousands of
// connections cannot keep others out (docs/api.md §5.8, §15): first the
// connection whose request (HTTP: its headers) or command has been
// incomplete the longest, if for over stuckAfter, since slow or half-sent
// input is how a client holds slots without using them; then the
// connection idle the longest (a client between requests or commands);
// then the connection incomplete the longest, however briefly, since the
// newcomer is certainly there and a client that sends its request in one
// write is the youngest of them. Closing a connection between requests is
// what every server's idle timeout does, and clients reopen one and
// retry; closing one whose request is incomplete is what a header timeout
// does, and nothing of its request has been served. When every connection
// is busy with a request or command, or owes its client answers, the new
// connection is answered Cap.Refusal in its protocol's words and closed:
// it learns at once why and may retry, rather than wait unserved in the
// accept queue for a slot it cannot see coming, past its own timeouts. A
// refusal is what Redis answers at maxclients, and a 503 with Retry-After
// sends an HTTP client or a load balancer to another instance. It is one
// behaviour for every front end, so that clients, load balancers and
// operators (the same metrics, the same log lines) meet the cap the same
// way whichever protocol they speak.
//
// There is no per-client share. The peer address is the only identity a
// client cannot forge, and behind nginx (deploy/), a cloud load balancer
// or a NAT every client has the same one: a per-address cap would cut off
// the proxy. And with idle and incomplete connections closed first, what
// one address can still hold is connections in a request, which the
// front ends' timeouts bound.
type Limiter struct {
	net.Listener
	max     int
	refusal []byte
	m       *Metrics
	log     *slog.Logger

	// idleSeq numbers the moments connections go idle, so the longest
	// idle is the one with the lowest number.
	idleSeq atomic.Uint64
	// base is the origin of the moments connections' requests or commands
	// began (Conn.begun), on the monotonic clock.
	base           time.Time
	stuckAfter     time.Duration // stuckAfter, but for tests
	lingering      atomic.Int32  // refused connections waiting for their client's close
	lastRefusal    atomic.Int64  // UnixNano of the last refusal logged
	lastIncomplete atomic.Int64  // UnixNano of the last incomplete connection's close logged

	mu    sync.Mutex
	conns map[*Conn]struct{}
}

// Limit caps the connections accepted from ln.
func Limit(ln net.Listener, c Cap) *Limiter {
	l := &Limiter{
		Listener: ln, max: c.Max, refusal: c.Refusal, m: c.Metrics, log: c.Log,
		base: time.Now(), stuckAfter: stuckAfter, conns: make(map[*Conn]struct{}),
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

// admit adds c to the open connections if there is room, closing a
// connection that owes its client nothing while there is none (victim);
// with none such it reports false.
func (l *Limiter) admit(c *Conn) bool {
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.conns[c] = struct{}{}
			l.mu.Unlock()
			return true
		}
		v := l.victim(time.Since(l.base))
		l.mu.Unlock()
		if v.c == nil {
			return false
		}
		// Still as it was seen: closed for the newcomer. Had it changed
		// meanwhile (gone busy, its request complete), the CAS fails and
		// the search starts over.
		if v.idle && v.c.idleSince.CompareAndSwap(v.mark, 0) {
			l.m.idleClosed.Inc()
			_ = v.c.Close()
		}
		if !v.idle && v.c.begun.CompareAndSwap(v.mark, 0) {
			l.m.incompleteClosed.Inc()
			l.logIncomplete(time.Since(l.base) - time.Duration(v.mark))
			_ = v.c.Close()
		}
	}
}

// victim is the connection admit closes for a newcomer, and the mark it
// was chosen by: idleSince if idle, else begun.
type victim struct {
	c    *Conn
	idle bool
	mark uint64
}

// victim chooses the connection to close for a newcomer at the cap, now
// being the time since l.base: the one whose request or command has been
// incomplete the longest if for over stuckAfter, else the one idle the
// longest, else the one incomplete the longest; none (a nil c) when every
// connection is busy or owes answers. It looks at every open connection,
// so it runs only at the cap: the cost of knowing who is idle is then paid
// there, not by each request. l.mu is held.
func (l *Limiter) victim(now time.Duration) victim {
	var idle, begun victim
	for c := range l.conns {
		if seq := c.idleSince.Load(); seq != 0 && (idle.c == nil || seq < idle.mark) {
			idle = victim{c, true, seq}
		}
		if at := c.begun.Load(); at != 0 && (begun.c == nil || at < begun.mark) {
			begun = victim{c, false, at}
		}
	}
	switch {
	case begun.c != nil && now-time.Duration(begun.mark) > l.stuckAfter:
		return begun
	case idle.c != nil:
		return idle
	}
	return begun
}

// logIncomplete tells the log, at most once a minute, that a connection
// was closed at the cap with its request or command incomplete for d.
func (l *Limiter) logIncomplete(d time.Duration) {
	now := time.Now().UnixNano()
	if last := l.lastIncomplete.Load(); now-last > int64(time.Minute) && l.lastIncomplete.CompareAndSwap(last, now) {
		l.log.Warn("connection closed at "+l.m.capKey+" with its request or command incomplete: slow or half-sent input is taking the connections",
			l.m.capKey, l.max, "incomplete_for", d.Round(time.Millisecond))
	}
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
		l.log.Warn("connection refused: "+l.m.capKey+" reached and every connection busy with a request or command", l.m.capKey, l.max)
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

// connCounts are the numbers of connections open, and of those idle and
// incomplete.
type connCounts struct{ open, idle, incomplete int }

// counts counts the connections. It looks at every one: it is for the
// metrics' scrape.
func (l *Limiter) counts() connCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := connCounts{open: len(l.conns)}
	for c := range l.conns {
		if c.idleSince.Load() != 0 {
			n.idle++
		}
		if c.begun.Load() != 0 {
			n.incomplete++
		}
	}
	return n
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
	// idleSeq), 0 while it is new, busy, incomplete or closing.
	idleSince atomic.Uint64
	// begun is when its client began sending the request or command it
	// has not finished, as nanoseconds since the Limiter's base (at least
	// 1); 0 when there is none.
	begun atomic.Uint64
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
// busy; either ends a mark of Begin. A connection starts busy. It is on
// every request's path, so it takes no lock: one atomic store, an atomic
// add to go idle, and a load. A c the Limiter did not admit is ignored.
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
	if lc.begun.Load() != 0 {
		lc.begun.Store(0)
	}
	if !idle {
		lc.idleSince.Store(0)
		return
	}
	lc.idleSince.Store(lc.l.idleSeq.Add(1))
}

// Begin marks c, a busy connection, as partway through receiving a
// request or command that its client began sending at: HTTP's new
// connection until its request's headers are read, a RESP command cut
// short by a read. At the cap the Limiter may close it for a newcomer
// (Limiter), as nothing of that request has been served; SetIdle ends the
// mark. It costs an atomic store. A c the Limiter did not admit is
// ignored.
func Begin(c net.Conn, at time.Time) {
	lc, ok := c.(*Conn)
	if !ok {
		return
	}
	lc.begun.Store(uint64(max(at.Sub(lc.l.base), 1)))
}

// Metrics are a Limiter's figures, named for its front end
// (idalloc_<subsystem>_…):
//
//	idalloc_<subsystem>_connections                          connections open, at most the cap
//	idalloc_<subsystem>_idle_connections                     those idle: room a newcomer finds at the cap
//	idalloc_<subsystem>_incomplete_connections               those partway through a request or command: room too
//	idalloc_<subsystem>_idle_connections_closed_total        idle connections closed to make room at the cap
//	idalloc_<subsystem>_incomplete_connections_closed_total  those closed with a request or command incomplete
//	idalloc_<subsystem>_connections_refused_total            connections refused at the cap, none to close
//
// The gauges are read at scrape time from the Limiter last made with
// the Metrics, so that marking a connection costs no more than its atomic
// store.
type Metrics struct {
	limiter          atomic.Pointer[Limiter]
	idleClosed       prometheus.Counter
	incompleteClosed prometheus.Counter
	refused          prometheus.Counter
	collectors       []prometheus.Collector
	capKey           string // the cap's config key, for help texts and the log
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
	gauge := func(name, help string, read func(connCounts) int) prometheus.Collector {
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
	m.incompleteClosed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "idalloc", Subsystem: subsystem, Name: "incomplete_connections_closed_total",
		Help: "Connections closed to make room for a new one at " + capKey + " while their client had begun a request (its headers) or command and not finished sending it: slow or half-sent input.",
	})
	m.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "idalloc", Subsystem: subsystem, Name: "connections_refused_total",
		Help: "New connections answered \"too many clients\" and closed at " + capKey + ", every open one being busy with a request or command.",
	})
	m.collectors = []prometheus.Collector{
		gauge("connections", "Connections open, at most "+capKey+".", func(n connCounts) int { return n.open }),
		gauge("idle_connections", "Open connections idle (between requests or commands): those a new one may replace at "+capKey+".",
			func(n connCounts) int { return n.idle }),
		gauge("incomplete_connections", "Open connections whose client has begun a request (its headers) or command and not finished sending it: those a new one may replace at "+capKey+" too.",
			func(n connCounts) int { return n.incomplete }),
		m.idleClosed, m.incompleteClosed, m.refused,
	}
	return m
}
