package resp

import (
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzCommands sends random bytes into a connection of a real front end:
// the server must not panic (a panic in a connection's goroutine would end
// the test binary), must answer or close within a deadline, must not hold
// memory in proportion to what the bytes claim (a bulk length of 2^40), and
// whatever the bytes do to their connection, another connection opened
// before them still answers.
func FuzzCommands(f *testing.F) {
	for _, seed := range []string{
		"PING\r\n",
		bulk("GET", "test_business") + bulk("INCR", "test_business"),
		bulk("MGET", "test_business", "nope", "a b"),
		bulk("IDS", "test_business", "3") + bulk("IDS", "test_business", "0"),
		bulk("SNOWFLAKE", "2"),
		bulk("HSET", "t", "type", "2", "length", "12", "starting", "100000000000"),
		bulk("INFO") + bulk("INFO", "test_business") + bulk("INFO", "server"),
		bulk("HELLO", "3") + bulk("HELLO", "2", "AUTH", "default", "x", "SETNAME", "n"),
		bulk("CLIENT", "SETINFO", "LIB-NAME", "x") + bulk("COMMAND", "DOCS") + bulk("SELECT", "0"),
		bulk("AUTH", "x") + bulk("DEL", "test_business") + bulk("QUIT"),
		"*2\r\n$3\r\nGET\r\n$999999999999\r\n",
		"*99999999\r\n",
		"*1\r\n$-1\r\n",
		"ECHO \"unbalanced\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\n\r\n" + bulk("HSET", "evil", "step", "1"),
		"\x00\xff\r\n\n\n*",
		strings.Repeat("*1\r\n$4\r\nPING\r\n", 100),
	} {
		f.Add([]byte(seed))
	}
	in := start(f, options{cfg: Config{AdminToken: token}})
	witness := dialRaw(f, in.addr)
	f.Fuzz(func(t *testing.T, input []byte) {
		conn := dialRaw(t, in.addr)
		if _, err := conn.Write(input); err != nil {
			return // closed on an earlier part of the input: fine
		}
		_ = conn.Conn.(interface{ CloseWrite() error }).CloseWrite()
		// The server answers and closes: at the end of the input, on a
		// refusal, or on QUIT.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, io.LimitReader(conn.r, 64<<20)); err != nil {
			t.Fatalf("reading the answers to %q: %v", input, err)
		}
		if got := witness.send(t, "PING\r\n"); got != "+PONG" {
			t.Fatalf("after %q another connection's PING = %q, want +PONG", input, got)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > 512<<20 {
			t.Fatalf("heap in use %d MiB after %q", ms.HeapInuse>>20, input)
		}
	})
}
