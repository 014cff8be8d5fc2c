package resp

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const token = "s3cret"

// TestGoRedis drives every command of docs/api.md §6 with go-redis v9, the real
// client, against the front end on a real TCP listener, SQLite store,
// allocator and worker lease.
func TestGoRedis(t *testing.T) {
	in := start(t, options{cfg: Config{AdminToken: token}})
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: in.addr, Password: token})
	anon := redis.NewClient(&redis.Options{Addr: in.addr})
	t.Cleanup(func() { _ = admin.Close(); _ = anon.Close() })

	t.Run("HSET with idalloc's fields", func(t *testing.T) {
		n, err := admin.HSet(ctx, "order", "step", 100, "start", 1000, "description", "orders").Result()
		if err != nil || n != 3 {
			t.Fatalf("HSET = %d, %v; want 3 fields set", n, err)
		}
		if got := mustGet(t, admin, "order"); got != 1000 {
			t.Errorf("first GET = %d, want the start 1000", got)
		}
	})
	t.Run("HSET with number-dispenser's fields", func(t *testing.T) {
		n, err := admin.HSet(ctx, "order_id", "type", 2, "length", 12, "starting", 100000000000, "auto_disk", "pre-base").Result()
		if err != nil || n != 4 {
			t.Fatalf("HSET = %d, %v; want 4 fields set", n, err)
		}
		got, err := admin.Get(ctx, "order_id").Result()
		if err != nil || got != "100000000000" {
			t.Errorf("GET order_id = %q, %v; want the 12 digits 100000000000", got, err)
		}
		info := admin.Info(ctx, "order_id").Val()
		for _, want := range []string{"name:order_id\r\n", "format:fixed_length\r\n", "length:12\r\n", "step:1000\r\n"} {
			if !strings.Contains(info, want) {
				t.Errorf("INFO order_id = %q, want a line %q", info, want)
			}
		}
	})
	t.Run("HSET scrambled", func(t *testing.T) {
		if err := admin.HSet(ctx, "coupon", "type", 1, "length", 10).Err(); err != nil {
			t.Fatal(err)
		}
		ids, err := admin.Do(ctx, "IDS", "coupon", 100).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, admin.Get(ctx, "coupon").Val())
		seen := map[string]bool{}
		for _, id := range ids {
			if len(id) != 10 || id[0] == '0' || seen[id] {
				t.Fatalf("scrambled IDs %v: %q is not a new 10-digit number", ids, id)
			}
			seen[id] = true
		}
		info := admin.Info(ctx, "coupon").Val()
		if !strings.Contains(info, "format:scrambled\r\n") || !strings.Contains(info, "length:10\r\n") || strings.Contains(info, "key") {
			t.Errorf("INFO coupon = %q, want format:scrambled, length:10 and no key", info)
		}
	})
	t.Run("fixed_length to the end of its range", func(t *testing.T) {
		if err := admin.HSet(ctx, "two", "type", 2, "length", 2, "starting", 98).Err(); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"98", "99"} {
			if got := admin.Get(ctx, "two").Val(); got != want {
				t.Fatalf("GET two = %q, want %s", got, want)
			}
		}
		if err := admin.Get(ctx, "two").Err(); err == nil || err.Error() != "ERR app_tag ID space exhausted" {
			t.Errorf("GET after 99: got %v, want the exhausted error", err)
		}
	})
	t.Run("HSET refused", func(t *testing.T) {
		for _, tc := range []struct {
			args []any
			want string
		}{
			{[]any{"order", "step", 10}, "ERR app_tag already exists"},
			{[]any{"t2", "colour", "red"}, `ERR unknown field "colour": HSET takes`},
			{[]any{"t2", "step", "ten"}, "ERR invalid step: want an integer"},
			{[]any{"t2", "type", 9}, "ERR invalid type: must be 1 (scrambled), 2 (fixed_length) or 3 (sequential)"},
			{[]any{"t2", "step", 10, "step", 20}, `ERR field "step" given twice`},
			{[]any{"t2", "start", 5, "starting", 6}, `ERR field "starting" given twice`},
			{[]any{"t2", "step", 0}, "ERR invalid step: must be from 1 to 1000000"},
		} {
			err := admin.HSet(ctx, tc.args[0].(string), tc.args[1:]...).Err()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("HSET %v: got %v, want %q", tc.args, err, tc.want)
			}
		}
	})
	t.Run("GET INCR MGET IDS", func(t *testing.T) {
		var got []int64
		got = append(got, mustGet(t, admin, "order"))
		incr, err := admin.Incr(ctx, "order").Result()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, incr)
		by, err := admin.IncrBy(ctx, "order", 1).Result() // redis-py's incr()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, by)
		if err := admin.IncrBy(ctx, "order", 5).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR INCRBY takes an increment of 1 only") {
			t.Errorf("INCRBY order 5: got %v, want a refusal", err)
		}
		vals, err := admin.MGet(ctx, "order", "order", "order_id").Result()
		if err != nil || len(vals) != 3 {
			t.Fatalf("MGET = %v, %v", vals, err)
		}
		for _, v := range vals[:2] {
			got = append(got, atoi(t, v.(string)))
		}
		if d := vals[2].(string); len(d) != 12 {
			t.Errorf("MGET's fixed_length ID = %q, want 12 digits", d)
		}
		ids, err := admin.Do(ctx, "IDS", "order", 5).StringSlice()
		if err != nil || len(ids) != 5 {
			t.Fatalf("IDS order 5 = %v, %v", ids, err)
		}
		for _, s := range ids {
			got = append(got, atoi(t, s))
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("IDs %v: not strictly increasing at %d", got, i)
			}
		}
		if err := admin.Do(ctx, "IDS", "order", 1001).Err(); err == nil || err.Error() != "ERR invalid count: must be an integer from 1 to 1000" {
			t.Errorf("IDS order 1001: got %v, want the count's limit", err)
		}
		if err := admin.Get(ctx, "nope").Err(); err == nil || err.Error() != "ERR unknown app_tag: create it first (POST /tags, or HSET over RESP)" {
			t.Errorf("GET nope: got %v, want the unknown tag's words", err)
		}
	})
	t.Run("SNOWFLAKE", func(t *testing.T) {
		one, err := admin.Do(ctx, "SNOWFLAKE").Text()
		if err != nil {
			t.Fatal(err)
		}
		ids, err := admin.Do(ctx, "SNOWFLAKE", 3).StringSlice()
		if err != nil || len(ids) != 3 {
			t.Fatalf("SNOWFLAKE 3 = %v, %v", ids, err)
		}
		prev := atoi(t, one)
		for _, s := range ids {
			if id := atoi(t, s); id <= prev {
				t.Errorf("snowflake IDs %s %v not increasing", one, ids)
			} else {
				prev = id
			}
		}
	})
	t.Run("INFO", func(t *testing.T) {
		info, err := anon.Info(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"# Server\r\n", "redis_version:", "loading:0\r\n", "role:master\r\n"} {
			if !strings.Contains(info, want) {
				t.Errorf("INFO lacks %q: %q", want, info)
			}
		}
		if server := anon.Info(ctx, "server").Val(); !strings.Contains(server, "redis_version:") || strings.Contains(server, "loading:") {
			t.Errorf("INFO server = %q, want the Server section alone", server)
		}
		tag := anon.Info(ctx, "order").Val()
		for _, want := range []string{"name:order\r\n", "format:sequential\r\n", "length:0\r\n", "start:1000\r\n", "step:100\r\n",
			"current_step:", "buffered:", "issued:", "given_back:0\r\n", "wasted:0\r\n", "waste_rate:0.00%\r\n"} {
			if !strings.Contains(tag, want) {
				t.Errorf("INFO order lacks %q: %q", want, tag)
			}
		}
		if m, err := anon.InfoMap(ctx, "order").Result(); err != nil || m["Tag"]["name"] != "order" {
			t.Errorf("InfoMap order = %v, %v; want section Tag with name order", m, err)
		}
		// issued is the allocator's own figure, the one /metrics shows.
		for _, st := range in.alloc.Stats() {
			if st.AppTag == "order" && !strings.Contains(tag, "issued:"+strconv.FormatInt(st.Issued, 10)+"\r\n") {
				t.Errorf("INFO order = %q, want issued:%d", tag, st.Issued)
			}
		}
	})
	t.Run("AUTH", func(t *testing.T) {
		err := anon.HSet(ctx, "t3", "step", 10).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOAUTH ") {
			t.Fatalf("HSET without AUTH: got %v, want NOAUTH", err)
		}
		conn := anon.Conn()
		defer conn.Close()
		if err := conn.Do(ctx, "AUTH", "wrong").Err(); err == nil || err.Error() != "ERR invalid password" {
			t.Errorf("AUTH wrong: got %v, want Redis's ERR invalid password", err)
		}
		if err := conn.Do(ctx, "AUTH", "default", token).Err(); err != nil {
			t.Fatalf("AUTH default <token>: %v", err)
		}
		if err := conn.HSet(ctx, "t3", "step", 10).Err(); err != nil {
			t.Errorf("HSET after AUTH: %v", err)
		}
		bad := redis.NewClient(&redis.Options{Addr: in.addr, Password: "wrong", MaxRetries: -1})
		defer bad.Close()
		if err := bad.Ping(ctx).Err(); err == nil {
			t.Error("a client with the wrong password connected")
		}
	})
	t.Run("DEL refused", func(t *testing.T) {
		err := admin.Del(ctx, "order").Err()
		if err == nil || !strings.Contains(err.Error(), "would repeat its IDs") {
			t.Fatalf("DEL order: got %v, want a refusal saying why", err)
		}
		if mustGet(t, admin, "order") == 0 {
			t.Error("order is gone after DEL")
		}
	})
	t.Run("connection commands", func(t *testing.T) {
		conn := anon.Conn()
		defer conn.Close()
		checks := []struct {
			cmd  []any
			want string
		}{
			{[]any{"PING"}, "PONG"},
			{[]any{"PING", "hi"}, "hi"},
			{[]any{"ECHO", "x y"}, "x y"},
			{[]any{"SELECT", 0}, "OK"},
			{[]any{"CLIENT", "SETNAME", "me"}, "OK"},
			{[]any{"CLIENT", "GETNAME"}, "me"},
			{[]any{"CLIENT", "SETINFO", "LIB-NAME", "x"}, "OK"},
		}
		for _, c := range checks {
			if got, err := conn.Do(ctx, c.cmd...).Text(); err != nil || got != c.want {
				t.Errorf("%v = %q, %v; want %q", c.cmd, got, err, c.want)
			}
		}
		if err := conn.Do(ctx, "SELECT", 1).Err(); err == nil {
			t.Error("SELECT 1: got no error")
		}
		if err := conn.Do(ctx, "HELLO", 3).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPROTO") {
			t.Errorf("HELLO 3: got %v, want NOPROTO", err)
		}
		if m, err := conn.Do(ctx, "HELLO", 2).Slice(); err != nil || len(m) != 16 {
			t.Errorf("HELLO 2 = %v, %v", m, err)
		}
		if err := conn.Do(ctx, "FLUSHALL").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR unknown command") {
			t.Errorf("FLUSHALL: got %v, want unknown command", err)
		}
		if err := conn.Do(ctx, "COMMAND", "DOCS").Err(); err != nil {
			t.Errorf("COMMAND DOCS: %v", err)
		}
		if got, err := conn.Do(ctx, "CONFIG", "GET", "save").Slice(); err != nil || len(got) != 0 {
			t.Errorf("CONFIG GET save = %v, %v; want an empty array", got, err)
		}
	})
}

// TestPipelinedGETs: 10,000 GETs in one go-redis pipeline, one round trip,
// come back in order with no duplicate; and the answers are written in a
// few large writes, not one per command.
func TestPipelinedGETs(t *testing.T) {
	var writes atomic.Int64
	in := start(t, options{listen: func(ln net.Listener) net.Listener { return &countingListener{Listener: ln, writes: &writes} }})
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: in.addr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := writes.Load()
	const n = 10_000
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringCmd, n)
	for i := range cmds {
		cmds[i] = pipe.Get(ctx, "test_business")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	flushes := writes.Load() - before
	prev := int64(0)
	for i, c := range cmds {
		id := atoi(t, c.Val())
		if id <= prev {
			t.Fatalf("reply %d: ID %d after %d: out of order or repeated", i, id, prev)
		}
		prev = id
	}
	// One write per batch the server read (a few KB of commands each).
	if flushes > n/20 {
		t.Errorf("%d GETs were answered in %d writes, want a write per batch of commands (at most %d)", n, flushes, n/20)
	}
	t.Logf("%d pipelined GETs answered in %d writes", n, flushes)
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

func mustGet(tb testing.TB, rdb *redis.Client, tag string) int64 {
	tb.Helper()
	s, err := rdb.Get(context.Background(), tag).Result()
	if err != nil {
		tb.Fatalf("GET %s: %v", tag, err)
	}
	return atoi(tb, s)
}

func atoi(tb testing.TB, s string) int64 {
	tb.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		tb.Fatalf("%q is not an ID: %v", s, err)
	}
	return n
}

// waitFor polls cond for up to 5 seconds.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
