package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
)

// js53 is the JavaScript-safe layout's arithmetic (docs/api.md §2): 41 bits
// of milliseconds, then worker_bits (6 by default) and 12-worker_bits of
// sequence, so every ID is at most 2^53-1.
const (
	js53Max         = 1<<53 - 1
	js53WorkerBits  = 6
	js53SeqBits     = 12 - js53WorkerBits
	js53EpochMillis = 1767225600000 // the default epoch, 2026-01-01T00:00:00Z
)

// TestJS53EveryFrontEnd (docs/api.md §2, §14): two instances of one cluster
// on one MariaDB database, with snowflake.layout js53, hand out snowflake
// IDs on HTTP (one and many), the Redis protocol and gRPC. Every ID is at
// most 2^53-1, none is issued twice, each instance's strictly increase, and
// each decodes on every decode route (HTTP /snowflake/{id}, Leaf's
// /decodeSnowflakeId, gRPC DecodeSnowflake) to the same worker ID, sequence
// and time: the instance's worker ID, the layout's arithmetic, within the
// run. A third instance with the default layout on that database is
// refused: a cluster's layout is its for good.
func TestJS53EveryFrontEnd(t *testing.T) {
	env := setup(t)
	dsn := env.db.newDatabase(t)
	js53 := map[string]any{"enabled": true, "layout": "js53"}
	type node struct {
		in         *instance
		respAddr   string
		grpcAddr   string
		ids        []int64
		workerSeen map[int64]bool
	}
	var nodes []*node
	for i, name := range []string{"a", "b"} {
		addrs := [2]string{loopbackAddr(t), loopbackAddr(t)}
		in := newInstance(t, env, name, dsn, config(map[string]any{"resp_addr": addrs[0], "grpc_addr": addrs[1], "snowflake": js53}))
		if err := in.start(i == 0); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, &node{in: in, respAddr: addrs[0], grpcAddr: addrs[1], workerSeen: map[int64]bool{}})
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	start := time.Now().Add(-time.Second)
	for _, n := range nodes {
		rc := redis.NewClient(&redis.Options{Addr: n.respAddr, MaxRetries: -1})
		conn, err := grpc.NewClient(n.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rc.Close(); _ = conn.Close() })
		g := idallocv1.NewIDAllocatorClient(conn)
		// Each way in turn, many times, so that the sequence fills within a
		// millisecond and rolls over into the next.
		for range 50 {
			r, err := n.in.ctl.get("/snowflake")
			if err != nil || r.RespCode != 0 {
				t.Fatalf("%s GET /snowflake: %+v, %v", n.in.name, r, err)
			}
			n.ids = append(n.ids, r.ID)
			r, err = n.in.ctl.get("/snowflake?count=100")
			if err != nil || r.RespCode != 0 || len(r.IDs) != 100 {
				t.Fatalf("%s GET /snowflake?count=100: %+v, %v", n.in.name, r, err)
			}
			n.ids = append(n.ids, r.IDs...)
			s, err := rc.Do(ctx, "SNOWFLAKE").Text()
			if err != nil {
				t.Fatalf("%s RESP SNOWFLAKE: %v", n.in.name, err)
			}
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("%s RESP SNOWFLAKE answered %q", n.in.name, s)
			}
			n.ids = append(n.ids, id)
			ids, err := rc.Do(ctx, "SNOWFLAKE", 20).Int64Slice()
			if err != nil || len(ids) != 20 {
				t.Fatalf("%s RESP SNOWFLAKE 20: %v, %v", n.in.name, ids, err)
			}
			n.ids = append(n.ids, ids...)
			gr, err := g.Snowflake(ctx, &idallocv1.SnowflakeRequest{Count: 50})
			if err != nil || len(gr.GetIds()) != 50 {
				t.Fatalf("%s gRPC Snowflake 50: %v, %v", n.in.name, gr, err)
			}
			n.ids = append(n.ids, gr.GetIds()...)
		}
		end := time.Now().Add(time.Second)

		for i, id := range n.ids {
			if id <= 0 || id > js53Max {
				t.Fatalf("%s: ID %d is not in 1..2^53-1", n.in.name, id)
			}
			if i > 0 && id <= n.ids[i-1] {
				t.Fatalf("%s: ID %d after %d, not increasing", n.in.name, id, n.ids[i-1])
			}
		}
		// Decode a sample on every route: the first, the last and every 97th.
		for i, id := range n.ids {
			if i%97 != 0 && i != len(n.ids)-1 {
				continue
			}
			wantMS := id>>12 + js53EpochMillis
			wantWorker := id >> js53SeqBits & (1<<js53WorkerBits - 1)
			wantSeq := id & (1<<js53SeqBits - 1)
			if at := time.UnixMilli(wantMS); at.Before(start) || at.After(end) {
				t.Fatalf("%s: ID %d's time %s is outside the run (%s to %s)", n.in.name, id, at, start, end)
			}
			n.workerSeen[wantWorker] = true

			r, err := n.in.ctl.get("/snowflake/" + strconv.FormatInt(id, 10))
			if err != nil || r.RespCode != 0 || r.TimestampMS != wantMS || r.WorkerID != wantWorker || r.Sequence != wantSeq {
				t.Fatalf("%s GET /snowflake/%d: %+v, %v; want timestamp_ms %d, worker %d, sequence %d", n.in.name, id, r, err, wantMS, wantWorker, wantSeq)
			}
			leaf := leafDecode(t, n.in, id)
			if leaf.WorkerID != strconv.FormatInt(wantWorker, 10) || leaf.SequenceID != strconv.FormatInt(wantSeq, 10) ||
				len(leaf.Timestamp) < 13 || leaf.Timestamp[:13] != strconv.FormatInt(wantMS, 10) {
				t.Fatalf("%s GET /decodeSnowflakeId?snowflakeId=%d: %+v; want worker %d, sequence %d, timestamp %d", n.in.name, id, leaf, wantWorker, wantSeq, wantMS)
			}
			d, err := g.DecodeSnowflake(ctx, &idallocv1.DecodeSnowflakeRequest{Id: id})
			if err != nil || d.GetTimestampMs() != wantMS || d.GetWorkerId() != wantWorker || d.GetSequence() != wantSeq {
				t.Fatalf("%s gRPC DecodeSnowflake %d: %v, %v; want timestamp_ms %d, worker %d, sequence %d", n.in.name, id, d, err, wantMS, wantWorker, wantSeq)
			}
		}
		if len(n.workerSeen) != 1 {
			t.Errorf("%s: its IDs decode to worker IDs %v, want one", n.in.name, n.workerSeen)
		}
		t.Logf("%s: %d IDs, the largest %d (2^53-1 is %d), worker ID %v", n.in.name, len(n.ids), n.ids[len(n.ids)-1], int64(js53Max), n.workerSeen)
	}
	for w := range nodes[0].workerSeen {
		if nodes[1].workerSeen[w] {
			t.Errorf("both instances issued IDs as worker %d", w)
		}
	}
	all := append(append([]int64(nil), nodes[0].ids...), nodes[1].ids...)
	if dups, examples := checkUnique(all); dups > 0 {
		t.Errorf("%d IDs issued twice, among them %v", dups, examples)
	}

	// The cluster's layout record says js53: a default-layout instance on the
	// same database must not start.
	other := newInstance(t, env, "default-layout", dsn, config(map[string]any{"snowflake": map[string]any{"enabled": true}}))
	err := other.start(false)
	if err == nil {
		t.Fatal("an instance with the default layout started on a js53 cluster's database")
	}
	if !strings.Contains(err.Error(), "records layout js53") {
		t.Errorf("the default-layout instance failed to start, but not saying the layout differs: %v", err)
	}
	t.Logf("the default-layout instance was refused: %v", err)
}

// leafReply is Leaf's decode answer: every value a string.
type leafReply struct {
	WorkerID   string `json:"workerId"`
	SequenceID string `json:"sequenceId"`
	Timestamp  string `json:"timestamp"`
}

func leafDecode(t *testing.T, in *instance, id int64) leafReply {
	t.Helper()
	resp, err := in.ctl.hc.Get(fmt.Sprintf("%s/decodeSnowflakeId?snowflakeId=%d", in.url, id))
	if err != nil {
		t.Fatalf("%s GET /decodeSnowflakeId: %v", in.name, err)
	}
	defer resp.Body.Close()
	var r leafReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s GET /decodeSnowflakeId?snowflakeId=%d: %d, %v", in.name, id, resp.StatusCode, err)
	}
	return r
}
