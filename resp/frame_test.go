package resp

import (
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/frontend"
)

// TestGateDeliversWhatRedconReads: commands written in chunks of any size,
// multibulk and inline mixed, reach redcon's reader through a gateConn
// exactly as sent, in order, whatever the chunking.
func TestGateDeliversWhatRedconReads(t *testing.T) {
	var want [][]string
	var stream strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		n := 1 + rng.IntN(4)
		args := []string{"CMD"}
		for j := 1; j < n; j++ {
			args = append(args, strings.Repeat(string(rune('a'+j)), rng.IntN(3000)))
		}
		if i%7 == 0 { // inline: no empty or spaced arguments
			args = []string{"PING", "x" + strings.Repeat("y", rng.IntN(50))}
			stream.WriteString(strings.Join(args, " ") + "\r\n")
		} else {
			stream.WriteString(bulk(args...))
		}
		want = append(want, args)
	}
	data := []byte(stream.String())

	server, client := net.Pipe()
	l := newListener(nil, frontend.DefaultMaxPending, frontend.DefaultMaxPendingTotal, frontend.DefaultCommandTimeout, mustMetrics(t))
	gc := &gateConn{Conn: server, l: l, buf: make([]byte, gateBufSize)}
	l.conns[gc] = struct{}{}
	go func() {
		for len(data) > 0 {
			k := min(len(data), 1+rng.IntN(10_000))
			if _, err := client.Write(data[:k]); err != nil {
				return
			}
			data = data[k:]
		}
		_ = client.Close()
	}()
	rd := redcon.NewReader(gc)
	for i, args := range want {
		cmd, err := rd.ReadCommand()
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		got := make([]string, len(cmd.Args))
		for j, a := range cmd.Args {
			got[j] = string(a)
		}
		if !slices.Equal(got, args) {
			t.Fatalf("command %d = %.60q, want %.60q", i, got, args)
		}
	}
	_ = gc.Close()
}

// TestFramerChunking: the framer reaches the same last boundary and the
// same refusal whether a stream comes whole, a byte at a time, or in
// chunks of 7.
func TestFramerChunking(t *testing.T) {
	for _, in := range []string{
		bulk("GET", "a") + bulk("MGET", "a", "b", "") + "PING\r\n\r\n" + bulk("PING"),
		bulk("ECHO", strings.Repeat("x", MaxArgSize)),
		"*2\r\n$3\r\nGET\r\n$70000\r\n",
		"*1025\r\n",
		"PING\r\n*x\r\n",
		"*1\r\n$3\r\nGETX\r\n",
		"PING\r\nECHO " + strings.Repeat("x", MaxArgSize+2),
	} {
		wantEnd, wantErr := lastBoundary([]byte(in), len(in))
		for _, size := range []int{1, 7} {
			end, err := lastBoundary([]byte(in), size)
			if end != wantEnd || err != wantErr {
				t.Errorf("%.40q in chunks of %d: last boundary %d, refusal %v; whole: %d, %v", in, size, end, err, wantEnd, wantErr)
			}
		}
	}
}

// lastBoundary feeds b to a framer in chunks of size and returns the offset
// where the last complete command ends (-1 if none), and the refusal if
// any.
func lastBoundary(b []byte, size int) (int, error) {
	var f framer
	last := -1
	for off := 0; off < len(b); {
		chunk := b[off:min(len(b), off+size)]
		n, end, _, err := f.scan(chunk)
		if end >= 0 {
			last = off + end
		}
		if err != nil {
			return last, err
		}
		off += n
	}
	return last, nil
}

func mustMetrics(tb testing.TB) *Metrics {
	tb.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkGet is the hot path over a real connection: pipelines of 16 GETs
// (redis-benchmark's -P 16), answers read back.
func BenchmarkGet(b *testing.B) {
	in := start(b, options{noFlake: true})
	conn := dialRaw(b, in.addr)
	batch := []byte(strings.Repeat(bulk("GET", "test_business"), 16))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		if _, err := conn.Write(batch); err != nil {
			b.Fatal(err)
		}
		for range 16 {
			conn.line(b)
			conn.line(b)
		}
	}
}
