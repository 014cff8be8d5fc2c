package main

import (
	"net"
	"sync"
)

// DefaultMaxConns is the default of max_conns. An open HTTP connection costs
// a goroutine, its read and write buffers and a file descriptor, tens of KB
// in all; 10,000 keeps the worst case to a few hundred MB and well inside
// the usual descriptor limits, while a load balancer or a fleet of
// keep-alive clients needs hundreds. It is the RESP front end's default
// too (resp_max_conns, API.md §6).
const DefaultMaxConns = 10_000

// connLimiter is a net.Listener that holds at most max connections open, like
// golang.org/x/net/netutil.LimitListener, and can close every one it holds.
// At the cap it stops accepting: further connections wait in the kernel's
// accept queue (they are not refused) until one closes. closeAll is how the
// stop cuts connections that outlive their share of shutdown_timeout.
type connLimiter struct {
	net.Listener
	sem       chan struct{} // one token per open connection
	done      chan struct{} // closed by Close, to release a blocked Accept
	closeOnce sync.Once

	mu    sync.Mutex
	conns map[*limitedConn]struct{}
}

func limitConns(ln net.Listener, max int) *connLimiter {
	return &connLimiter{
		Listener: ln,
		sem:      make(chan struct{}, max),
		done:     make(chan struct{}),
		conns:    make(map[*limitedConn]struct{}),
	}
}

// Accept waits for a free slot, then for a connection.
func (l *connLimiter) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
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

// limitedConn gives its slot back when closed, once however often Close is
// called.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.sem
	})
	return err
}
