package resp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idalloc/idalloc/frontend"
)

// pipes are outputs on net.Pipe sockets, which take nothing until their
// far end reads: what an output is given waits in its backlog, to the
// byte, until the test reads it.
type pipes struct {
	budget  budget
	limited prometheus.Counter
	mu      sync.Mutex
	outs    []*output
}

func newPipes(maxTotal int64) *pipes {
	p := &pipes{limited: prometheus.NewCounter(prometheus.CounterOpts{Name: "limited"})}
	p.budget = budget{max: maxTotal, cut: prometheus.NewCounter(prometheus.CounterOpts{Name: "cut"}), largest: p.largest}
	return p
}

// largest is listener.largest over p's outputs.
func (p *pipes) largest() *output {
	p.mu.Lock()
	defer p.mu.Unlock()
	var big *output
	for _, o := range p.outs {
		if n := o.pending.Load(); n > 0 && (big == nil || n > big.pending.Load()) {
			big = o
		}
	}
	return big
}

// open returns an output of at most maxPending bytes waiting, and the far
// end of its socket.
func (p *pipes) open(tb testing.TB, maxPending int64) (*output, net.Conn) {
	tb.Helper()
	near, far := net.Pipe()
	tb.Cleanup(func() { _ = near.Close(); _ = far.Close() })
	o := &output{conn: near, max: maxPending, limited: p.limited, budget: &p.budget}
	p.mu.Lock()
	p.outs = append(p.outs, o)
	p.mu.Unlock()
	return o, far
}

// fill writes n bytes of c to o, which its far end does not read.
func fill(tb testing.TB, o *output, c byte, n int) error {
	tb.Helper()
	w, err := o.write(bytes.Repeat([]byte{c}, n))
	if err == nil && w != n {
		tb.Fatalf("write = %d, nil; want %d", w, n)
	}
	return err
}

// readAll reads far until it ends, which it must within 5 s.
func readAll(tb testing.TB, far net.Conn) []byte {
	tb.Helper()
	_ = far.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(far)
	if err != nil {
		tb.Fatalf("read: %v", err)
	}
	return b
}

// readN reads n bytes of far, which must come within 5 s.
func readN(tb testing.TB, far net.Conn, n int) []byte {
	tb.Helper()
	_ = far.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(far, b); err != nil {
		tb.Fatalf("read: %v", err)
	}
	return b
}

// TestBudgetEvictsTheLargest: when answers would take the total waiting
// past the budget, the connection holding the most is closed, counted, and
// gives its bytes back, whether it is the one adding or another; the rest
// keep theirs.
func TestBudgetEvictsTheLargest(t *testing.T) {
	const kb = 1 << 10
	cases := []struct {
		name       string
		a, b, more int   // a's bytes, then b's, then b's more
		cut        int   // 0: a is cut, 1: b is
		wantTotal  int64 // waiting after the cut
	}{
		{"another holds the most: it is cut", 60 * kb, 30 * kb, 30 * kb, 0, 60 * kb},
		{"the adder holds the most: it is cut", 30 * kb, 60 * kb, 30 * kb, 1, 30 * kb},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(100 * kb)
			a, farA := p.open(t, 1<<20)
			b, farB := p.open(t, 1<<20)
			if err := fill(t, a, 'a', tc.a); err != nil {
				t.Fatal(err)
			}
			if err := fill(t, b, 'b', tc.b); err != nil {
				t.Fatal(err)
			}
			errMore := fill(t, b, 'B', tc.more)
			outs, fars := []*output{a, b}, []net.Conn{farA, farB}
			cut, kept := outs[tc.cut], outs[1-tc.cut]
			if got := cut.reason(); got != errOutputTotal {
				t.Errorf("the largest's reason = %v, want errOutputTotal", got)
			}
			if (tc.cut == 1) != (errMore == errOutputTotal) {
				t.Errorf("the adder's write = %v, want errOutputTotal only if it held the most", errMore)
			}
			if got := kept.reason(); got != nil {
				t.Errorf("the other's reason = %v, want nil", got)
			}
			if got := testutil.ToFloat64(p.budget.cut); got != 1 {
				t.Errorf("connections cut = %v, want 1", got)
			}
			if got := p.budget.total.Load(); got != tc.wantTotal {
				t.Errorf("total waiting after the cut = %d, want %d", got, tc.wantTotal)
			}
			if got := len(readAll(t, fars[tc.cut])); got != 0 {
				t.Errorf("the cut connection's client read %d bytes, want its answers dropped", got)
			}
			// The one kept gets all it was given, in order.
			want := strings.Repeat("a", tc.a)
			if kept == b {
				want = strings.Repeat("b", tc.b) + strings.Repeat("B", tc.more)
			}
			if got := readN(t, fars[1-tc.cut], len(want)); string(got) != want {
				t.Errorf("the other's client read other bytes than its %d", len(want))
			}
			kept.wait()
			if got := p.budget.total.Load(); got != 0 {
				t.Errorf("total waiting once all is read = %d, want 0", got)
			}
		})
	}
}

// TestBudgetGetsEveryByteBack: however a backlog ends, its bytes leave the
// budget's total, and a connection cut at its own cap (MaxPending) is
// counted there, not as an eviction.
func TestBudgetGetsEveryByteBack(t *testing.T) {
	const kb = 1 << 10
	cases := []struct {
		name    string
		end     func(t *testing.T, o *output, far net.Conn) // how the backlog ends
		limited float64
	}{
		{"the client reads it all", func(t *testing.T, o *output, far net.Conn) {
			if got := len(readN(t, far, 40*kb)); got != 40*kb {
				t.Errorf("read %d bytes, want %d", got, 40*kb)
			}
		}, 0},
		{"the client goes away (a failed write)", func(t *testing.T, o *output, far net.Conn) { _ = far.Close() }, 0},
		{"the server closes the socket (Cut, the drain's end)", func(t *testing.T, o *output, far net.Conn) { _ = o.conn.Close() }, 0},
		{"the connection passes MaxPending", func(t *testing.T, o *output, far net.Conn) {
			if err := fill(t, o, 'y', 40*kb); err != errOutputLimit {
				t.Errorf("write past MaxPending = %v, want errOutputLimit", err)
			}
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(1 << 20)
			o, far := p.open(t, 64*kb)
			if err := fill(t, o, 'x', 40*kb); err != nil {
				t.Fatal(err)
			}
			if got := p.budget.total.Load(); got != 40*kb {
				t.Fatalf("total waiting = %d, want %d", got, 40*kb)
			}
			tc.end(t, o, far)
			done := make(chan struct{})
			go func() { o.wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the writer did not end within 5 s")
			}
			if got := p.budget.total.Load(); got != 0 {
				t.Errorf("total waiting = %d, want 0", got)
			}
			if got := o.pending.Load(); got != 0 {
				t.Errorf("pending = %d, want 0", got)
			}
			if got := testutil.ToFloat64(p.limited); got != tc.limited {
				t.Errorf("closed at MaxPending = %v, want %v", got, tc.limited)
			}
			if got := testutil.ToFloat64(p.budget.cut); got != 0 {
				t.Errorf("evictions = %v, want 0", got)
			}
		})
	}
}

// smallSendBuffers makes the kernel hold little of what the server sends
// on each connection, so that what a client does not read waits in the
// server from its first kilobytes, where the test can count it.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// pendingTotal is the bytes waiting across s's connections.
func pendingTotal(s *Server) int64 {
	s.cutMu.Lock()
	l := s.ln
	s.cutMu.Unlock()
	if l == nil {
		return 0
	}
	return l.budget.total.Load()
}

// TestMaxPendingTotal: a client that holds 832 KB of answers waiting and a
// second one that pipelines and never reads pass a 1 MiB budget together,
// neither alone; the first, holding the most, is closed and counted,
// before either reaches its own cap. A client that reads its answers meanwhile is
// untouched, and once every connection has ended, nothing is counted as
// waiting.
func TestMaxPendingTotal(t *testing.T) {
	in := start(t, options{cfg: Config{MaxPending: 1 << 20, MaxPendingTotal: 1 << 20},
		listen: func(ln net.Listener) net.Listener { return smallSendBuffers{ln} }})
	holder := dialRaw(t, in.addr)
	smallReadBuffer(t, holder)
	if _, err := holder.Write([]byte(strings.Repeat(flakes1000, 32))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the holder's answers to wait in the server", func() bool { return pendingTotal(in.srv) >= 700<<10 })

	flooder := dialRaw(t, in.addr)
	smallReadBuffer(t, flooder)
	flooded := make(chan error, 1)
	go func() { flooded <- flood(flooder) }()
	reader := dialRaw(t, in.addr)
	for range 25 {
		if _, err := reader.Write([]byte(strings.Repeat(flakes1000, 4))); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			readArray(t, reader, 1000)
		}
	}
	if err := <-flooded; err != nil {
		t.Fatal(err)
	}
	if !ended(holder) {
		t.Error("the client holding the most is still connected")
	}
	if got := testutil.ToFloat64(in.srv.metrics.outputTotal); got < 1 {
		t.Errorf(`idalloc_resp_connections_closed_total{reason="output_total"} = %v, want at least 1`, got)
	}
	if got := reader.send(t, "PING\r\n"); got != "+PONG" {
		t.Errorf("the reader's PING = %q, want +PONG", got)
	}
	_ = reader.Close()
	waitFor(t, "every connection to end", func() bool { return in.srv.openConns() == 0 })
	if got := pendingTotal(in.srv); got != 0 {
		t.Errorf("answers waiting once every connection ended = %d bytes, want 0", got)
	}
}

// flood pipelines SNOWFLAKE 1000 on c and reads nothing until the server
// closes it, or returns an error after 20 s.
func flood(c *rawConn) error {
	chunk := []byte(strings.Repeat(flakes1000, 1000)) // 29 KB: 26 MB of answers
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, err := c.Write(chunk)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue // the server is busy with the last chunk
		}
		if err != nil {
			return nil // closed by the server
		}
	}
	return errors.New("a client that never reads was not closed within 20s")
}

// ended reports whether the server closed c: reading what is left ends in
// EOF or a reset, not a timeout.
func ended(c *rawConn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c.r)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// TestNewChecksPendingCaps: MaxPendingTotal must hold what MaxPending
// lets one connection hold, defaults included.
func TestNewChecksPendingCaps(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{}, false},
		{"equal", Config{MaxPending: 1 << 20, MaxPendingTotal: 1 << 20}, false},
		{"total below the default MaxPending", Config{MaxPendingTotal: frontend.DefaultMaxPending - 1}, true},
		{"MaxPending above the default total", Config{MaxPending: frontend.DefaultMaxPendingTotal + 1}, true},
		{"total below MaxPending", Config{MaxPending: 1 << 20, MaxPendingTotal: 1<<20 - 1}, true},
		{"negative total", Config{MaxPendingTotal: -1}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, Deps{Segments: nopSegments{}})
			if (err != nil) != tc.wantErr {
				t.Errorf("New = %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}
