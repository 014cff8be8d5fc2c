package main

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// connLimiter is a net.Listener that holds at most max connections open and
// can close every one it holds (closeAll: how the stop cuts connections
// that outlive their share of shutdown_timeout).
//
// At the cap, a new connection is accepted and the connection idle the
// longest (an HTTP/1.1 keep-alive connection between requests, as
// http.Server's ConnState hook reports it: connState) is closed to make
// room, so that one client holding thousands of idle connections cannot
// keep others out for the idle timeout (API.md §5.8). Closing a keep-alive
// connection between requests is allowed by HTTP/1.1, and clients reopen
// one and retry an idempotent request that raced the close. Only when no
// connection is idle, every one in a request or yet to send its first
// (which ReadHeaderTimeout bounds), does the new connection wait, unserved,
// until one closes or goes idle; later ones wait in the kernel's accept
// queue. Connections are never refused. The RESP front end has a limiter
// of its own (resp/), which answers a connection over resp_max_conns with
// an error and closes it.
//
// There is no per-client share. The peer address is the only identity a
// client cannot forge, and behind nginx (deploy/), a cloud load balancer
// or a NAT every client has the same one: a per-address cap would cut off
// the proxy. And with idle connections closed first, what one address can
// still hold is connections in a request, which the server's timeouts
// bound to seconds.
type connLimiter struct {
	net.Listener
	max       int
	done      chan struct{} // closed by Close, to release an Accept waiting for room
	freed     chan struct{} // a connection closed or went idle; buffered, one pending
	closeOnce sync.Once

	idleClosed atomic.Int64 // idle connections closed to make room
	// idleSeq numbers the moments connections go idle, so the longest
	// idle is the one with the lowest number; waiting counts Accepts
	// waiting for room, the only ones a connection going idle must wake.
	idleSeq atomic.Uint64
	waiting atomic.Int32

	mu    sync.Mutex
	conns map[*limitedConn]struct{}
}

func limitConns(ln net.Listener, max int) *connLimiter {
	return &connLimiter{
		Listener: ln,
		max:      max,
		done:     make(chan struct{}),
		freed:    make(chan struct{}, 1),
		conns:    make(map[*limitedConn]struct{}),
	}
}

// Accept accepts a connection, then makes room for it under the cap.
// Accepting before making room means an idle connection is closed only for
// a client that is there.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	if err := l.admit(lc); err != nil {
		_ = c.Close()
		return nil, err
	}
	return lc, nil
}

// admit adds lc to the open connections once there is room, closing the
// longest-idle connection while there is none; with none idle it waits.
func (l *connLimiter) admit(lc *limitedConn) error {
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.conns[lc] = struct{}{}
			l.mu.Unlock()
			return nil
		}
		oldest, seq := l.longestIdle()
		l.mu.Unlock()
		// Still idle since it was seen: closed for the newcomer. (Had it
		// gone active meanwhile, the CAS fails and the search starts over.)
		if oldest != nil && oldest.idleSince.CompareAndSwap(seq, 0) {
			l.idleClosed.Add(1)
			_ = oldest.Close()
			continue
		}
		if oldest != nil {
			continue
		}
		l.waiting.Add(1)
		select {
		case <-l.freed:
		case <-l.done:
			l.waiting.Add(-1)
			return net.ErrClosed
		}
		l.waiting.Add(-1)
	}
}

// longestIdle returns the open connection idle the longest and the number
// of the moment it went idle, or nil. It looks at every open connection,
// so it runs only at the cap: the cost of knowing who is idle is then
// paid there, not by each request. l.mu is held.
func (l *connLimiter) longestIdle() (*limitedConn, uint64) {
	var oldest *limitedConn
	var min uint64
	for c := range l.conns {
		if seq := c.idleSince.Load(); seq != 0 && (oldest == nil || seq < min) {
			oldest, min = c, seq
		}
	}
	return oldest, min
}

// connState is http.Server's ConnState hook: it marks a connection idle
// with the moment's number, and active (or new, or closing) with 0. It is
// on every request's path, twice, so it takes no lock: one atomic store,
// and a wake-up only when an Accept waits for room. net/http reports a
// connection active once its next request's header is read, so one closed
// as idle may have a request arriving on it: the same race as the idle
// timeout's and http.Server.Shutdown's, which HTTP/1.1 clients answer by
// retrying an idempotent request on a new connection (RFC 9112 §9.3.1).
func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	if state != http.StateIdle {
		lc.idleSince.Store(0)
		return
	}
	lc.idleSince.Store(l.idleSeq.Add(1))
	if l.waiting.Load() > 0 {
		l.nudge()
	}
}

// nudge wakes an Accept waiting for room.
func (l *connLimiter) nudge() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// Close closes the listener; open connections stay open.
func (l *connLimiter) Close() error {
	err := net.ErrClosed
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// open returns the number of connections open.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// closeAll closes every open connection.
func (l *connLimiter) closeAll() {
	l.mu.Lock()
	conns := make([]*limitedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// register puts the limiter's figures on reg, so that an operator sees the
// cap reached (deploy/README.md, Metrics).
func (l *connLimiter) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idalloc", Subsystem: "http", Name: "connections",
			Help: "HTTP connections open, at most max_conns.",
		}, func() float64 { return float64(l.open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "idalloc", Subsystem: "http", Name: "idle_connections_closed_total",
			Help: "Idle keep-alive HTTP connections closed to make room for a new one at max_conns.",
		}, func() float64 { return float64(l.idleClosed.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// limitedConn gives its slot back when closed, once however often Close is
// called.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once

	// idleSince is the number of the moment it went idle (connLimiter's
	// idleSeq), 0 while it is new, in a request, or closing.
	idleSince atomic.Uint64
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.nudge()
	})
	return err
}
