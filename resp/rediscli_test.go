package resp

import (
	"bytes"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestRedisCLI runs docs/api.md §6's session through redis-cli itself (package
// redis-tools), as a user types it: both HSET dialects, GET, INCR, MGET,
// IDS, SNOWFLAKE, INFO, AUTH, DEL refused, and 10,000 pipelined GETs with
// --pipe.
func TestRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (apt-get install redis-tools): skipping the redis-cli session")
	}
	in := start(t, options{cfg: Config{AdminToken: token}})
	host, port, _ := net.SplitHostPort(in.addr)
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("redis-cli %v: %v (%s)", args, err, errOut.String())
		}
		return strings.TrimRight(out.String(), "\n")
	}
	auth := []string{"-a", token, "--no-auth-warning"}
	expect := func(want string, args ...string) {
		t.Helper()
		if got := run("", args...); got != want {
			t.Errorf("redis-cli %s = %q, want %q", strings.Join(args, " "), got, want)
		}
	}

	expect("PONG", "PING")
	if got := run("", "HSET", "cli", "step", "10"); !strings.HasPrefix(got, "NOAUTH ") {
		t.Errorf("HSET without -a = %q, want NOAUTH", got)
	}
	expect("1", append(auth, "HSET", "cli", "step", "10")...)
	expect("3", append(auth, "HSET", "order_id", "type", "2", "length", "12", "starting", "100000000000")...)
	expect("100000000000", "GET", "order_id")
	expect("1", "GET", "cli")
	expect("2", "INCR", "cli")
	expect("3\n4", "MGET", "cli", "cli")
	expect("5\n6\n7", "IDS", "cli", "3")
	expect("ERR app_tag already exists", append(auth, "HSET", "cli", "step", "10")...)
	expect("ERR unknown app_tag: create it first (POST /tags, or HSET over RESP)", "GET", "nope")
	if got := run("", "DEL", "cli"); !strings.Contains(got, "would repeat its IDs") {
		t.Errorf("DEL cli = %q, want the refusal", got)
	}
	if got := run("", "SNOWFLAKE"); len(got) < 10 {
		t.Errorf("SNOWFLAKE = %q, want an ID", got)
	}
	if got := run("", "INFO"); !strings.Contains(got, "loading:0") {
		t.Errorf("INFO = %q, want loading:0", got)
	}
	if got := run("", "INFO", "cli"); !strings.Contains(got, "name:cli") || !strings.Contains(got, "issued:7") {
		t.Errorf("INFO cli = %q, want name:cli and issued:7", got)
	}
	// Commands typed one per line, as in an interactive session.
	if got := run("GET cli\nGET cli\n"); got != "8\n9" {
		t.Errorf("two GETs on stdin = %q, want 8 and 9", got)
	}

	// 10,000 GETs sent in one stream by --pipe, which counts the replies.
	var pipe strings.Builder
	for range 10_000 {
		pipe.WriteString("*2\r\n$3\r\nGET\r\n$3\r\ncli\r\n")
	}
	if got := run(pipe.String(), "--pipe"); !strings.Contains(got, "errors: 0, replies: 10000") {
		t.Errorf("redis-cli --pipe = %q, want 10000 replies and no error", got)
	}
	if got := run("", "GET", "cli"); got != strconv.Itoa(10_010) {
		t.Errorf("GET after the pipe = %q, want 10010", got)
	}
}
