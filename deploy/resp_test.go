package deploy_test

// The Redis protocol through nginx's stream proxy, as compose publishes it
// on 6380: a real go-redis client, a real nginx, real idalloc binaries.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// checkRESPThroughNginx: two connections through the proxy land on the two
// instances (least_conn), each GETs increasing IDs, and 1,000 GETs
// pipelined on one connection come back in order, all above the IDs that
// connection had before: one connection, one instance. (The stack's
// instances each have an embedded store of their own, so IDs across them
// are not comparable here; the e2e tests share one database.)
func checkRESPThroughNginx(t *testing.T, px *nginxProxy, inst []*instance) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: px.respAddr})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PING through nginx %s: %v\n%s", px.respAddr, err, px.proc.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Dedicated connections, opened one after the other while the first
	// stays open: least_conn sends the second to the other instance.
	conns := []*redis.Conn{c.Conn(), c.Conn()}
	defer func() {
		for _, cn := range conns {
			_ = cn.Close()
		}
	}()
	var pids []int
	var last int64 // of the first connection
	for i, cn := range conns {
		info, err := cn.Info(ctx, "server").Result()
		if err != nil {
			t.Fatalf("INFO server on connection %d through nginx: %v", i, err)
		}
		pids = append(pids, infoInt(t, info, "process_id"))
		first, err1 := cn.Get(ctx, "test_business").Int64()
		second, err2 := cn.Get(ctx, "test_business").Int64()
		if err1 != nil || err2 != nil || second <= first {
			t.Fatalf("GET test_business twice on connection %d through nginx = %d (%v), %d (%v); want two increasing IDs",
				i, first, err1, second, err2)
		}
		if i == 0 {
			last = second
		}
	}
	want := []int{inst[0].proc.cmd.Process.Pid, inst[1].proc.cmd.Process.Pid}
	slices.Sort(pids)
	if !slices.Equal(pids, sortedInts(want)) {
		t.Errorf("the two connections reached processes %v, want both instances %v", pids, want)
	}

	cmds, err := conns[0].Pipelined(ctx, func(p redis.Pipeliner) error {
		for range 1000 {
			p.Get(ctx, "test_business")
		}
		return nil
	})
	if err != nil || len(cmds) != 1000 {
		t.Fatalf("1,000 pipelined GETs through nginx: %d answers, %v", len(cmds), err)
	}
	prev := last
	for i, cmd := range cmds {
		id, err := cmd.(*redis.StringCmd).Int64()
		if err != nil || id <= prev {
			t.Fatalf("pipelined GET %d = %d, %v; want an ID above %d (one connection, one instance, in order)", i, id, err, prev)
		}
		prev = id
	}
	t.Logf("RESP through nginx: connections on processes %v, 1,000 pipelined GETs %d..%d in order", pids, last+1, prev)
}

// infoInt reads the integer field name from an INFO answer.
func infoInt(t *testing.T, info, name string) int {
	t.Helper()
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO %s:%q: %v", name, v, err)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s: %q", name, info)
	return 0
}

func sortedInts(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
