package resp

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// bulk is a command in RESP's multibulk form.
func bulk(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// TestLimits: what breaks a limit of docs/api.md §6, or is not RESP, is answered
// with an error and its connection closed, after the commands sent before
// it are answered; every other connection goes on.
func TestLimits(t *testing.T) {
	in := start(t, options{noFlake: true})
	other := dialRaw(t, in.addr)
	if got := other.send(t, "PING\r\n"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
	tooMany := "*1025\r\n" + strings.Repeat("$4\r\nPING\r\n", 1025)
	cases := []struct {
		name, input, want string
	}{
		{"argument over 64 KiB", bulk("ECHO", strings.Repeat("x", 64<<10+1)), "-ERR Protocol error: bulk argument over 64 KiB"},
		{"argument length over 64 KiB announced", "*2\r\n$4\r\nECHO\r\n$999999999999\r\n", "-ERR Protocol error: bulk argument over 64 KiB"},
		{"inline line over 64 KiB", "ECHO " + strings.Repeat("x", 64<<10) + "\r\n", "-ERR Protocol error: inline command over 64 KiB"},
		{"inline line without end", "ECHO " + strings.Repeat("x", 100<<10), "-ERR Protocol error: inline command over 64 KiB"},
		{"1,025 arguments", tooMany, "-ERR Protocol error: more than 1024 arguments"},
		{"a command over 256 KiB", bulk("MGET", strings.Repeat("a", 60<<10), strings.Repeat("b", 60<<10),
			strings.Repeat("c", 60<<10), strings.Repeat("d", 60<<10), strings.Repeat("e", 60<<10)), "-ERR Protocol error: command over 256 KiB"},
		{"bad count", "*x\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"no $", "*1\r\n:5\r\n", "-ERR Protocol error: expected '$'"},
		{"bulk not ended by CRLF", "*1\r\n$4\r\nPINGxx", "-ERR Protocol error: invalid bulk length"},
		{"zero arguments", "*0\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"unbalanced quotes", "ECHO \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request"},
		{"HTTP POST", "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 22\r\n\r\nHSET evil step 1\r\n", "-ERR this port speaks the Redis protocol, not HTTP: closing"},
		{"HTTP GET", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "-ERR this port speaks the Redis protocol, not HTTP: closing"},
		{"a Host header first", "Host: 127.0.0.1\r\nHSET evil step 1\r\n", "-ERR this port speaks the Redis protocol, not HTTP: closing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := dialRaw(t, in.addr)
			// Commands before the offence are answered first.
			if _, err := conn.Write([]byte("PING\r\n" + bulk("PING", "hi") + c.input)); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"+PONG", "$2", "hi"} {
				if got := conn.line(t); got != want {
					t.Fatalf("reply before the offence = %q, want %q", got, want)
				}
			}
			if got := conn.line(t); got != c.want {
				t.Errorf("reply = %q, want %q", got, c.want)
			}
			if !conn.closed(t) {
				t.Error("connection still open")
			}
			if got := other.send(t, "PING\r\n"); got != "+PONG" {
				t.Errorf("another connection's PING = %q, want +PONG", got)
			}
		})
	}
	// Exactly at the limits is served.
	conn := dialRaw(t, in.addr)
	if got := conn.send(t, bulk("ECHO", strings.Repeat("x", 64<<10))); got != "$65536" {
		t.Errorf("ECHO of 64 KiB = %q, want it echoed", got)
	}
	_, _ = conn.r.Discard(64<<10 + 2)
	if got := conn.send(t, "*1024\r\n$4\r\nMGET\r\n"+strings.Repeat("$4\r\nnope\r\n", 1023)); !strings.HasPrefix(got, "-ERR unknown app_tag") {
		t.Errorf("MGET of 1,023 tags = %q, want it served (an unknown tag)", got)
	}
	// The HTTP requests created nothing.
	for _, tag := range in.alloc.Tags() {
		if tag.AppTag == "evil" {
			t.Error("a tag was created from an HTTP request's body")
		}
	}
}

// TestConnectionCap: at resp_max_conns a new connection is served and one
// that owes its client nothing is closed for it: the one idle the longest
// (waiting for a command, nothing owed), and with none idle the one
// partway through a command the longest. With every one owing answers a
// new connection is answered Redis's error and closed; once one closes, a
// new one is served. (Which comes first of an idle connection and one
// partway through a command, by how long, is TestStuckCommandClosedFirst's
// and frontend's.)
func TestConnectionCap(t *testing.T) {
	in := start(t, options{cfg: Config{MaxConns: 3}})
	var conns []*rawConn
	for i := range 3 {
		c := dialRaw(t, in.addr)
		if got := c.send(t, "PING\r\n"); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
		conns = append(conns, c)
		// A client reads its answer before the server's goroutine is back
		// at reading, where it marks the connection idle: wait for it
		// before the next, so that they are idle in the order dialled.
		waitFor(t, "the connection to be idle", func() bool {
			return gauge(t, in, "idalloc_resp_idle_connections") == float64(i+1)
		})
	}
	fourth := dialRaw(t, in.addr)
	if got := fourth.send(t, "PING\r\n"); got != "+PONG" {
		t.Errorf("4th connection with three idle: PING = %q, want +PONG", got)
	}
	if !conns[0].closed(t) {
		t.Error("the connection idle the longest left open at the cap, want it closed for the 4th")
	}
	// conns[1], conns[2], then the 4th are partway through a command.
	partway := []*rawConn{conns[1], conns[2], fourth}
	for i, c := range partway {
		if _, err := io.WriteString(c, "*1\r\n$4\r\nPI"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the partial command to be read", func() bool {
			return gauge(t, in, "idalloc_resp_incomplete_connections") == float64(i+1)
		})
	}
	fifth := dialRaw(t, in.addr)
	if got := fifth.send(t, "PING\r\n"); got != "+PONG" {
		t.Errorf("5th connection with none idle: PING = %q, want +PONG", got)
	}
	if !partway[0].closed(t) {
		t.Error("the connection partway through a command the longest left open at the cap, want it closed for the 5th")
	}
	// The others were kept: their commands complete.
	for i, c := range partway[1:] {
		if got := c.send(t, "NG\r\n"); got != "+PONG" {
			t.Errorf("connection %d partway through a command at the cap: PING = %q, want +PONG (kept)", i, got)
		}
	}
	// Every connection owes answers it does not read: none to close.
	busy := []*rawConn{conns[2], fourth, fifth}
	for _, c := range busy {
		smallReadBuffer(t, c)
		if _, err := io.WriteString(c, strings.Repeat(flakes1000, 250)); err != nil { // 6.5 MB of answers
			t.Fatal(err)
		}
	}
	waitFor(t, "the SNOWFLAKEs to be answered", func() bool {
		return testutil.ToFloat64(in.srv.metrics.commands[cmdSnowflake][outOK]) == 750
	})
	over := dialRaw(t, in.addr)
	if got := over.line(t); got != "-ERR max number of clients reached" {
		t.Errorf("6th connection with every one owing answers got %q, want the cap's error", got)
	}
	if !over.closed(t) {
		t.Error("6th connection left open")
	}
	_ = busy[0].Close()
	waitFor(t, "a slot to free", func() bool { return in.srv.openConns() < 3 })
	if got := dialRaw(t, in.addr).send(t, "PING\r\n"); got != "+PONG" {
		t.Errorf("a connection after one closed: PING = %q", got)
	}
	for name, want := range map[string]float64{
		"idalloc_resp_connections": 3, "idalloc_resp_idle_connections_closed_total": 1,
		"idalloc_resp_incomplete_connections_closed_total": 1, "idalloc_resp_connections_refused_total": 1,
	} {
		if got := gauge(t, in, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// TestStuckCommandClosedFirst: at resp_max_conns a connection partway
// through a command for over 250 ms is closed for a new one before an
// idle one.
func TestStuckCommandClosedFirst(t *testing.T) {
	in := start(t, options{noFlake: true, cfg: Config{MaxConns: 2}})
	stuck, idle := dialRaw(t, in.addr), dialRaw(t, in.addr)
	if _, err := io.WriteString(stuck, "*2\r\n$3\r\nGET\r\n$13\r\ntest_busi"); err != nil {
		t.Fatal(err)
	}
	if got := idle.send(t, "PING\r\n"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
	time.Sleep(400 * time.Millisecond)
	if got := dialRaw(t, in.addr).send(t, "PING\r\n"); got != "+PONG" {
		t.Errorf("new connection at the cap: PING = %q, want +PONG", got)
	}
	if !stuck.closed(t) {
		t.Error("the connection stuck partway through a command left open at the cap, want it closed first")
	}
	if got := idle.send(t, "PING\r\n"); got != "+PONG" {
		t.Errorf("idle connection: PING = %q, want +PONG (kept)", got)
	}
}

// TestCommandTimeout: a command must be complete resp_command_timeout
// after its first bytes, trickled or not, or the client is answered an
// error and the connection closed; a command sent in pieces within it is
// served, and so is a pipeline streamed for longer, each of its commands
// complete in time, and a connection idle for longer.
func TestCommandTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	in := start(t, options{noFlake: true, cfg: Config{CommandTimeout: timeout}})
	const answer = "-ERR command incomplete after 300ms (resp_command_timeout): connection closed"
	t.Run("half-sent", func(t *testing.T) {
		c := dialRaw(t, in.addr)
		began := time.Now()
		if _, err := io.WriteString(c, "*2\r\n$3\r\nGET\r\n$13\r\ntest_busi"); err != nil {
			t.Fatal(err)
		}
		if got := c.line(t); got != answer {
			t.Errorf("half-sent command: got %q, want %q", got, answer)
		}
		if took := time.Since(began); took < timeout || took > timeout+2*time.Second {
			t.Errorf("half-sent command answered after %s, want %s (and a little)", took, timeout)
		}
		if !c.closed(t) {
			t.Error("connection open after the command timeout")
		}
	})
	t.Run("trickled", func(t *testing.T) {
		c := dialRaw(t, in.addr)
		began := time.Now()
		if _, err := io.WriteString(c, "*2\r\n$3\r\nGET\r\n$1000\r\ntest_busi"); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			l, _ := c.r.ReadString('\n')
			got <- strings.TrimSpace(l)
		}()
		for {
			select {
			case l := <-got:
				if l != answer {
					t.Errorf("trickled command: got %q, want %q", l, answer)
				}
				if took := time.Since(began); took > timeout+2*time.Second {
					t.Errorf("trickled command answered after %s, want %s (and a little)", took, timeout)
				}
				return
			case <-time.After(50 * time.Millisecond):
				_, _ = io.WriteString(c, "x") // fails once closed: the read says why
			}
		}
	})
	t.Run("pieces within the timeout", func(t *testing.T) {
		c := dialRaw(t, in.addr)
		if _, err := io.WriteString(c, "*2\r\n$3\r\nGET\r\n$13\r\ntest_"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(timeout / 3)
		if got := c.send(t, "business\r\n"); !strings.HasPrefix(got, "$") {
			t.Errorf("command in two pieces: got %q, want an ID", got)
		}
	})
	t.Run("pipeline streamed for longer", func(t *testing.T) {
		c := dialRaw(t, in.addr)
		const n = 400
		p := []byte(strings.Repeat(bulk("GET", "test_business"), n))
		const pieces = 12 // 600 ms, each piece ending partway through a command
		for i := range pieces {
			if _, err := c.Write(p[i*len(p)/pieces : (i+1)*len(p)/pieces]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * timeout / pieces)
		}
		for i := range n {
			if got := c.line(t); !strings.HasPrefix(got, "$") {
				t.Fatalf("pipelined GET %d: got %q, want an ID", i, got)
			}
			c.line(t)
		}
	})
	t.Run("idle for longer", func(t *testing.T) {
		c := dialRaw(t, in.addr)
		if got := c.send(t, "PING\r\n"); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
		time.Sleep(2 * timeout)
		if got := c.send(t, "PING\r\n"); got != "+PONG" {
			t.Errorf("PING after %s idle: %q, want +PONG", 2*timeout, got)
		}
	})
	if got := testutil.ToFloat64(in.srv.metrics.commandTimeout); got != 2 {
		t.Errorf(`idalloc_resp_connections_closed_total{reason="command_timeout"} = %v, want 2`, got)
	}
}

// TestIdleTimeout: a connection that sends nothing for resp_idle_timeout
// is closed; one that keeps talking is not.
func TestIdleTimeout(t *testing.T) {
	in := start(t, options{noFlake: true, cfg: Config{IdleTimeout: 300 * time.Millisecond}})
	idle := dialRaw(t, in.addr)
	busy := redis.NewClient(&redis.Options{Addr: in.addr, PoolSize: 1})
	defer busy.Close()
	if got := idle.send(t, "PING\r\n"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
	for range 6 {
		if err := busy.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("a connection in use was closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !idle.closed(t) {
		t.Error("idle connection still open after 600ms with a 300ms idle timeout")
	}
}
