package resp

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/redcon"
)

// flushSize is how much of a batch's answers a connection buffers before
// writing them: a pipeline of commands with large answers (IDS and
// SNOWFLAKE with a count) is written out in pieces of about this size as
// it is served, not held whole until its last command.
const flushSize = 64 << 10

// tryWrite is how long a connection with nothing waiting waits for the
// socket to take a write before handing the rest to its writer goroutine
// and serving the next commands. Go cannot attempt a write without a
// deadline in the future; a millisecond is that attempt.
const tryWrite = time.Millisecond

// errOutputLimit ends a connection whose answers waiting for the client
// to read them would pass Config.MaxPending.
var errOutputLimit = errors.New("resp: answers waiting for the client to read them passed resp_max_pending: connection closed")

// output is the write side of a connection, which lets a client pipeline
// commands without reading every answer before sending the next, as Redis
// does, while bounding what it can make the process hold. An answer the
// socket takes at once is written by the connection's goroutine, which
// then serves the next commands; the rest waits in a backlog that one
// writer goroutine, started then, writes in order while the connection's
// goroutine goes on serving. Answers that would take the backlog past max
// bytes close the connection and are dropped, the close counted: a client
// that sends commands and does not read their answers is cut there, having
// made the process hold about max, plus a piece of a batch's answers
// (flushSize, see flushEarly), plus its input buffers, instead of all it
// asked for. Every backlog's bytes are also counted in the Server's
// budget, which bounds them across connections (budget.go).
type output struct {
	conn    net.Conn
	max     int64
	limited prometheus.Counter // connections closed at max
	budget  *budget

	mu      sync.Mutex
	backlog [][]byte // answers the socket has not taken, in order
	// pending is the bytes in backlog and in the writer's hands, all of
	// them counted in budget. It changes under mu only; budget.largest
	// reads it without mu.
	pending atomic.Int64
	writing bool  // the writer goroutine runs
	err     error // why nothing more can be written; pending is 0 once set
	done    chan struct{}
}

// write writes b, or queues what the socket does not take at once. It is
// called by the connection's goroutine only (redcon's flush, flushEarly,
// a refusal), so the socket has one writer at a time: this goroutine while
// nothing is queued, the writer goroutine while something is.
func (o *output) write(b []byte) (int, error) {
	o.mu.Lock()
	if o.err != nil || o.writing {
		defer o.mu.Unlock()
		return o.enqueue(b, 0)
	}
	o.mu.Unlock()
	// The fast path: the socket takes b at once, and neither the backlog
	// nor the budget is touched.
	_ = o.conn.SetWriteDeadline(time.Now().Add(tryWrite))
	n, err := o.conn.Write(b)
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.enqueue(b, n)
}

// enqueue queues b[n:], the part of b the socket has not taken, and starts
// the writer goroutine unless it runs. It is called with mu held. The
// writer may have ended while queue let go of mu, so whether it runs is
// asked after queue, not before.
func (o *output) enqueue(b []byte, n int) (int, error) {
	if err := o.queue(b[n:]); err != nil {
		return n, err
	}
	if !o.writing {
		o.writing = true
		o.done = make(chan struct{})
		go o.writeBacklog(o.done)
	}
	return len(b), nil
}

// queue appends a copy of b to the backlog (b is redcon's buffer, reused
// once write returns), or closes the connection if that would pass max.
// If it would pass the budget, the connection holding the most is closed
// (this one, or another, for which mu is let go meanwhile) until b fits.
// It is called with mu held.
func (o *output) queue(b []byte) error {
	for {
		if o.err != nil {
			return o.err
		}
		if o.pending.Load()+int64(len(b)) > o.max {
			o.stop(errOutputLimit)
			o.limited.Inc()
			return o.err
		}
		if o.budget.take(len(b)) {
			break
		}
		o.mu.Unlock()
		o.budget.evict()
		o.mu.Lock()
	}
	o.pending.Add(int64(len(b)))
	// Small pieces (the answers of short batches) join the last one that
	// the writer has not taken yet, so a slow reader costs few writes.
	if n := len(o.backlog); n > 0 && len(o.backlog[n-1])+len(b) <= cap(o.backlog[n-1]) {
		o.backlog[n-1] = append(o.backlog[n-1], b...)
		return nil
	}
	o.backlog = append(o.backlog, append(make([]byte, 0, max(len(b), flushSize)), b...))
	return nil
}

// stop makes err the reason nothing more is written, unless there is one
// already: the backlog is dropped, as Redis drops a cut client's answers,
// its bytes (and those in the writer's hands, whose write the close ends
// at once) are given back to the budget, and the socket is closed, which
// wakes the writer and the connection's goroutine at its next read. It is
// called with mu held, and reports whether err is the reason. Every path
// that ends the writing goes through it, so the budget gets every byte
// back: a cut, an eviction, a failed write.
func (o *output) stop(err error) bool {
	if o.err != nil {
		return false
	}
	o.err = err
	o.backlog = nil
	o.budget.release(o.pending.Swap(0))
	_ = o.conn.Close()
	return true
}

// reason returns why nothing more can be written, or nil.
func (o *output) reason() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// writeBacklog is the writer goroutine: it writes the backlog in order and
// ends once it is empty, or when a write fails (the client has read
// nothing for writeTimeout, or the connection was closed), in which case
// it closes the socket so that the connection's goroutine ends too.
func (o *output) writeBacklog(done chan struct{}) {
	defer close(done)
	for {
		o.mu.Lock()
		if o.err != nil || len(o.backlog) == 0 {
			o.writing = false
			o.mu.Unlock()
			return
		}
		b := o.backlog[0]
		o.backlog[0] = nil
		o.backlog = o.backlog[1:]
		o.mu.Unlock()

		_ = o.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := o.conn.Write(b)
		o.mu.Lock()
		switch {
		case err != nil:
			o.stop(err)
		case o.err == nil:
			o.budget.release(int64(len(b)))
			o.pending.Add(-int64(len(b)))
		}
		// Otherwise the connection was stopped during the write, and
		// stop gave b's bytes back.
		o.mu.Unlock()
	}
}

// wait returns once the writer goroutine, if one runs, has ended: the
// backlog is written, or cannot be. Answers owed to a client that closes
// its side, or sends QUIT, are written before the socket is closed.
func (o *output) wait() {
	o.mu.Lock()
	done := o.done
	o.mu.Unlock()
	if done != nil {
		<-done
	}
}

// meter is a connection as the command handlers write to it: redcon's,
// with an upper bound of the bytes it has buffered since its last flush,
// so that flushEarly can write a batch out in pieces. It counts the writes
// the handlers make; another would only delay a flush to the batch's end.
type meter struct {
	redcon.Conn
	n int
}

// bulkHead bounds the bytes RESP adds around a value (its type byte, a
// length of up to 11 digits and two CRLFs), and intSize an integer reply.
const (
	bulkHead = 16
	intSize  = 24
)

func (m *meter) WriteBulk(b []byte)       { m.n += bulkHead + len(b); m.Conn.WriteBulk(b) }
func (m *meter) WriteBulkString(s string) { m.n += bulkHead + len(s); m.Conn.WriteBulkString(s) }
func (m *meter) WriteString(s string)     { m.n += bulkHead + len(s); m.Conn.WriteString(s) }
func (m *meter) WriteError(s string)      { m.n += bulkHead + len(s); m.Conn.WriteError(s) }
func (m *meter) WriteArray(n int)         { m.n += bulkHead; m.Conn.WriteArray(n) }
func (m *meter) WriteInt(v int)           { m.n += intSize; m.Conn.WriteInt(v) }
func (m *meter) WriteInt64(v int64)       { m.n += intSize; m.Conn.WriteInt64(v) }
func (m *meter) WriteNull()               { m.n += bulkHead; m.Conn.WriteNull() }

// flushEarly writes the batch's answers so far once they pass flushSize,
// before the batch's next command runs; redcon writes the rest after the
// batch's last command. If the write fails (the connection passed
// MaxPending, or is broken), the batch's other commands are not served.
func (s *Server) flushEarly(c redcon.Conn, ses *session) {
	switch {
	case len(c.PeekPipeline()) == 0: // the batch's last: redcon flushes now
		ses.out.n = 0
	case ses.out.n >= flushSize && !ses.closing:
		ses.out.n = 0
		if err := redcon.BaseWriter(c).Flush(); err != nil {
			ses.closing = true
		}
	}
}
