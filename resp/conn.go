package resp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/frontend"
)

// writeTimeout bounds one write of a connection's backlog (output.go): a
// client that reads nothing for so long is closed, even under
// MaxPending. It matches the HTTP server's.
const writeTimeout = 15 * time.Second

// gateBufSize is the read buffer of a connection: one read from the socket
// takes at most this much.
const gateBufSize = 8 << 10

// errMaxClients is Redis's own answer at its maxclients cap, which clients
// know: what the connection cap (frontend.Limiter) answers a connection
// that finds resp_max_conns open, every one busy.
var errMaxClients = redcon.AppendError(nil, "ERR max number of clients reached")

// errCommandTimeout ends a connection whose command stayed incomplete for
// CommandTimeout (resp_command_timeout).
var errCommandTimeout = errors.New("command incomplete at resp_command_timeout")

// gateConn is a connection as redcon reads it. It reads the socket itself,
// follows the command boundaries with a framer, and hands redcon whole
// commands (so redcon's reader, which grows its buffer while a command is
// incomplete, keeps it near the size of one command), or part of one
// command when that is all there is. Bytes that break a limit or are not
// RESP are never handed over: the commands before them are, and once
// redcon has served those and asks for more, the client is answered
// "-ERR Protocol error: …" and redcon is given the error, which makes it
// close the connection. Its writes go through out, which bounds the
// answers waiting for the client to read them.
type gateConn struct {
	net.Conn
	l   *listener
	out output
	f   framer
	buf []byte
	// buf[r:w] is read and not yet handed over; buf[:scanned] has been
	// through the framer; buf[:safe] ends on a command boundary.
	r, w, scanned, safe int
	perr                error // a *protocolError, refused once buf[r:w] is handed over
	rerr                error // a read error that came with data, returned after it
	refused             bool
	// began is when the command the client is partway through sending
	// began (the read that brought its first bytes ended); zero between
	// commands.
	began time.Time
	// stopping: serve the complete commands already read, then end the
	// connection as if the client had closed it (the drain's end).
	stopping  atomic.Bool
	closeOnce sync.Once
}

// Read implements io.Reader for redcon's reader. redcon calls it only when
// it has answered and flushed every command it had, so a refusal written
// here comes after every answer owed.
func (c *gateConn) Read(p []byte) (int, error) {
	for {
		switch {
		case c.safe > c.r: // whole commands
			n := copy(p, c.buf[c.r:c.safe])
			c.r += n
			return n, nil
		case c.scanned < c.w:
			c.scan()
		case c.r < c.w: // the start of a command
			if c.stopping.Load() {
				return 0, io.EOF // drop it
			}
			n := copy(p, c.buf[c.r:c.w])
			c.r += n
			return n, nil
		default:
			if err := c.fill(); err != nil {
				return 0, err
			}
		}
	}
}

// scan moves the framer over the next unscanned bytes.
func (c *gateConn) scan() {
	base := c.scanned
	n, end, start, err := c.f.scan(c.buf[base:c.w])
	c.scanned = base + n
	if end >= 0 {
		c.safe = base + end
	}
	if err != nil {
		c.perr = err
		c.w = max(base+start, c.r)
		c.scanned = c.w
	}
}

// fill reads the socket once into buf, or returns why not.
//
// While it waits, the connection is idle for the connection cap, which
// may close it for a new client, if it owes its client nothing: every
// command read was whole and every answer is written (redcon calls Read
// only once it has answered and flushed what it had, but a backlog may
// still be on its way). A connection yet to send its first command is
// idle too: client pools open connections ahead of use, and a silent one
// would hold its slot for resp_idle_timeout. It costs the read two atomic
// stores, an add and three loads.
//
// A command cut short by the last read is incomplete: the cap may close
// the connection for a new client too (frontend.Begin), and the command
// must be complete CommandTimeout after it began, or the client is
// answered an error and the connection closed (docs/api.md §15). Only
// then does fill read the clock and set a read deadline, which redcon's
// next batch replaces with its idle one.
func (c *gateConn) fill() error {
	switch {
	case c.perr != nil:
		return c.refuse()
	case c.rerr != nil:
		return c.rerr
	case c.stopping.Load():
		return io.EOF
	}
	owed := c.out.pending.Load() != 0
	incomplete := c.safe != c.w
	switch {
	case !incomplete:
		c.began = time.Time{}
	case c.began.IsZero() || c.safe > 0: // the last read began a command
		c.began = time.Now()
		_ = c.Conn.SetReadDeadline(c.began.Add(c.l.commandTimeout))
		if c.stopping.Load() {
			return io.EOF // stop's deadline must not be replaced by ours
		}
	}
	c.r, c.w, c.scanned, c.safe = 0, 0, 0, 0
	switch {
	case owed:
	case incomplete:
		frontend.Begin(c.Conn, c.began)
	default:
		frontend.SetIdle(c.Conn, true)
	}
	n, err := c.Conn.Read(c.buf)
	if !owed {
		frontend.SetIdle(c.Conn, false)
	}
	if n == 0 {
		if c.stopping.Load() {
			return io.EOF // woken by the drain's deadline
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		if why := c.out.reason(); why != nil {
			// The socket was closed by the write side (a cut, an
			// eviction by another connection, a failed write): that is
			// why the connection ends, not the read error it caused.
			return why
		}
		if incomplete && errors.Is(err, os.ErrDeadlineExceeded) {
			c.l.metrics.commandTimeout.Inc()
			_, _ = c.out.write(c.l.timeoutAnswer)
			return errCommandTimeout
		}
		return err
	}
	c.w, c.rerr = n, err
	return nil
}

// refuse answers the protocol error once, after the answers still
// waiting, and returns it.
func (c *gateConn) refuse() error {
	if !c.refused {
		c.refused = true
		_, _ = c.out.write(redcon.AppendError(nil, "ERR "+c.perr.Error()))
	}
	return c.perr
}

// Write is redcon's flush, once per batch of commands (and flushEarly's).
func (c *gateConn) Write(b []byte) (int, error) { return c.out.write(b) }

// Close writes the answers still waiting (output.wait), closes the socket
// and gives the connection's slot back.
func (c *gateConn) Close() error {
	c.out.wait()
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.l.remove(c) })
	return err
}

// aLongTimeAgo is a read deadline that has passed: setting it wakes a
// blocked read at once.
var aLongTimeAgo = time.Unix(1, 0)

// stop ends the connection at its next command boundary: a connection
// waiting for a command is woken now, one serving commands after it has
// answered those it has read.
func (c *gateConn) stop() {
	c.stopping.Store(true)
	_ = c.Conn.SetReadDeadline(aLongTimeAgo)
}

// listener wraps each connection the cap admits in a gateConn, keeps
// them for the drain, Cut, INFO and the budget's choice of a victim, and
// can stop accepting without ending redcon's Serve (which would close
// every connection at once): after stopAccepting, Accept waits for
// release.
type listener struct {
	net.Listener   // the connection cap (frontend.Limiter)
	maxPending     int
	commandTimeout time.Duration
	timeoutAnswer  []byte // the error a command incomplete at commandTimeout is answered
	budget         budget // answers waiting across connections
	metrics        *Metrics

	mu      sync.Mutex
	conns   map[*gateConn]struct{}
	emptied chan struct{} // closed when conns becomes empty; nil if nobody waits

	stopped     chan struct{}
	released    chan struct{}
	stopOnce    sync.Once
	releaseOnce sync.Once
	closeOnce   sync.Once
	backoff     time.Duration
}

func newListener(ln net.Listener, maxPending int, maxPendingTotal int64, commandTimeout time.Duration, m *Metrics) *listener {
	l := &listener{
		Listener: ln, maxPending: maxPending, metrics: m, commandTimeout: commandTimeout,
		timeoutAnswer: redcon.AppendError(nil, fmt.Sprintf("ERR command incomplete after %s (resp_command_timeout): connection closed", commandTimeout)),
		conns:         make(map[*gateConn]struct{}),
		stopped:       make(chan struct{}), released: make(chan struct{}),
	}
	l.budget = budget{max: maxPendingTotal, cut: m.outputTotal, largest: l.largest}
	return l
}

// Accept returns the next connection the cap admits, as a gateConn.
func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		select {
		case <-l.stopped:
			<-l.released
			return nil, net.ErrClosed
		default:
		}
		if !errors.Is(err, net.ErrClosed) {
			// redcon retries at once; back off as net/http does, so a
			// lack of descriptors does not spin a core.
			l.backoff = min(max(2*l.backoff, 5*time.Millisecond), time.Second)
			time.Sleep(l.backoff)
		}
		return nil, err
	}
	l.backoff = 0
	c := &gateConn{Conn: nc, l: l, buf: make([]byte, gateBufSize),
		out: output{conn: nc, max: int64(l.maxPending), limited: l.metrics.outputLimit, budget: &l.budget}}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return c, nil
}

func (l *listener) remove(c *gateConn) {
	l.mu.Lock()
	delete(l.conns, c)
	if len(l.conns) == 0 && l.emptied != nil {
		close(l.emptied)
		l.emptied = nil
	}
	l.mu.Unlock()
}

// Close closes the socket listener; redcon calls it when Serve returns.
func (l *listener) Close() error {
	err := net.ErrClosed
	l.closeOnce.Do(func() { err = l.Listener.Close() })
	return err
}

// stopAccepting closes the socket listener: new connections are refused by
// the kernel from now on, while the open ones go on.
func (l *listener) stopAccepting() {
	l.stopOnce.Do(func() {
		close(l.stopped)
		_ = l.Close()
	})
}

// release lets Accept return, which ends redcon's Serve.
func (l *listener) release() { l.releaseOnce.Do(func() { close(l.released) }) }

// open returns the number of connections open.
func (l *listener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// empty returns a channel closed once no connection is open.
func (l *listener) empty() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	if l.emptied == nil {
		l.emptied = make(chan struct{})
	}
	return l.emptied
}

// largest returns the output of the open connection holding the most
// answers waiting, or nil if none holds any: the budget's victim. It reads
// each count without the connection's lock, so the figures are not one
// instant's; budget.evict checks its victim again under its lock. It runs
// only when the budget is spent, and looks at every connection once.
func (l *listener) largest() *output {
	l.mu.Lock()
	defer l.mu.Unlock()
	var big *output
	var most int64
	for c := range l.conns {
		if n := c.out.pending.Load(); n > most {
			big, most = &c.out, n
		}
	}
	return big
}

// each calls f on every open connection.
func (l *listener) each(f func(*gateConn)) {
	l.mu.Lock()
	conns := make([]*gateConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		f(c)
	}
}
