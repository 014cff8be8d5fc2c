package resp

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// flakes1000 is the command whose answer is 26 KB for 29 bytes sent.
var flakes1000 = bulk("SNOWFLAKE", "1000")

// readArray reads an array of n IDs, or fails.
func readArray(tb testing.TB, c *rawConn, n int) {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line := func() string {
		l, err := c.r.ReadSlice('\n')
		if err != nil {
			tb.Fatalf("read an answer: %v", err)
		}
		return string(l[:max(0, len(l)-2)])
	}
	if head := line(); head != "*"+strconv.Itoa(n) {
		tb.Fatalf("answer = %q, want an array of %d", head, n)
	}
	for range n {
		if head := line(); head[0] != '$' {
			tb.Fatalf("array element = %q, want a bulk string", head)
		}
		line()
	}
}

// smallReadBuffer makes the kernel hold little of what the server sends
// c, so that what c does not read waits in the server. (It also keeps the
// TCP window small for the rest of the connection.)
func smallReadBuffer(tb testing.TB, c *rawConn) {
	tb.Helper()
	if err := c.Conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		tb.Fatal(err)
	}
}

// TestMaxPending: a client that pipelines commands and never reads their
// answers is closed once the answers waiting pass MaxPending, and the
// close is counted; other connections go on. Clients that read, however
// much their pipelines ask for, and clients that read once they have sent
// everything, within the cap, get every answer.
func TestMaxPending(t *testing.T) {
	cases := []struct {
		name       string
		maxPending int
		client     func(t *testing.T, c *rawConn)
		wantCut    bool
	}{
		{"never reads: closed at the cap", 64 << 10, neverReads, true},
		{"reads while sending 10 MB of answers", 0, func(t *testing.T, c *rawConn) {
			const n = 400 // 10.4 MB of answers, more than the default cap
			errC := make(chan error, 1)
			go func() {
				_, err := c.Write([]byte(strings.Repeat(flakes1000, n)))
				errC <- err
			}()
			for range n {
				readArray(t, c, 1000)
			}
			if err := <-errC; err != nil {
				t.Fatal(err)
			}
		}, false},
		{"reads once all is sent, within the cap", 0, func(t *testing.T, c *rawConn) {
			// 6.5 MB of answers: more than the kernel holds, so some wait
			// in the server.
			const n = 250
			if _, err := c.Write([]byte(strings.Repeat(flakes1000, n) + "QUIT\r\n")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			for range n {
				readArray(t, c, 1000)
			}
			if got := c.line(t); got != "+OK" {
				t.Fatalf("QUIT = %q, want +OK after every answer", got)
			}
			if !c.closed(t) {
				t.Error("connection open after QUIT")
			}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := start(t, options{cfg: Config{MaxPending: tc.maxPending}})
			other := dialRaw(t, in.addr)
			tc.client(t, dialRaw(t, in.addr))
			want := 0.0
			if tc.wantCut {
				want = 1
				waitFor(t, "the cut connection to end", func() bool { return in.srv.openConns() == 1 })
			}
			if got := testutil.ToFloat64(in.srv.metrics.outputLimit); got != want {
				t.Errorf(`idalloc_resp_connections_closed_total{reason="output_limit"} = %v, want %v`, got, want)
			}
			if got := other.send(t, "PING\r\n"); got != "+PONG" {
				t.Errorf("another connection's PING = %q, want +PONG", got)
			}
		})
	}
}

// neverReads pipelines SNOWFLAKE 1000 and reads nothing until the server
// closes the connection, or fails after 20 s.
func neverReads(t *testing.T, c *rawConn) {
	smallReadBuffer(t, c)
	if err := flood(c); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineOfGets: 1,000 pipelined GETs come back in order, under a cap
// far below the default.
func TestPipelineOfGets(t *testing.T) {
	in := start(t, options{noFlake: true, cfg: Config{MaxPending: 16 << 10}})
	rdb := redis.NewClient(&redis.Options{Addr: in.addr, PoolSize: 1})
	defer rdb.Close()
	ctx := context.Background()
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range 1000 {
			p.Get(ctx, "test_business")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		id, err := cmd.(*redis.StringCmd).Int64()
		if err != nil || id != int64(i+1) {
			t.Fatalf("GET %d = %d, %v; want %d", i, id, err, i+1)
		}
	}
	if got := testutil.ToFloat64(in.srv.metrics.outputLimit); got != 0 {
		t.Errorf("connections closed at the output limit = %v, want 0", got)
	}
}
