package redislease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quietDials{})
	os.Exit(m.Run())
}

// quietDials drops go-redis's log line for each failed dial, which the
// cases on a closed port make by the dozen, and passes on the rest.
type quietDials struct{}

func (quietDials) Printf(_ context.Context, format string, v ...any) {
	if msg := fmt.Sprintf(format, v...); !strings.Contains(msg, "failed to dial") {
		log.Print("redis: ", msg)
	}
}

// redisAddr is the Redis the tests use: shared, so every test works under
// a fresh key prefix and deletes only its own keys.
func redisAddr() string {
	if a := os.Getenv("IDALLOC_TEST_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// newTestClient returns a client of its own on the test Redis, closed at tb's
// cleanup, or skips tb when Redis does not answer.
func newTestClient(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr()})
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Skipf("no Redis at %s (set IDALLOC_TEST_REDIS_ADDR): %v", redisAddr(), err)
	}
	return c
}

// freshPrefix returns a key prefix no other test uses; its keys are
// deleted at tb's cleanup.
func freshPrefix(tb testing.TB) string {
	tb.Helper()
	prefix := "idalloc-test:" + randomHex(8) + ":"
	c := newTestClient(tb)
	tb.Cleanup(func() { deleteKeys(tb, c, prefix) })
	return prefix
}

// deleteKeys deletes the keys under prefix: the end of a test's namespace,
// or, during the test, Redis forgetting it.
func deleteKeys(tb testing.TB, c *redis.Client, prefix string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, k := range keysUnder(ctx, tb, c, prefix) {
		if err := c.Del(ctx, k).Err(); err != nil {
			tb.Errorf("delete test key %q: %v", k, err)
		}
	}
}

// forgetScoped adds to ns the hooks that lose one cluster's records (its
// lease hash and layout keys deleted) or one worker ID's (its four fields
// of the lease hash deleted), on the Redis that client returns.
func forgetScoped(ns leasetest.Namespace, prefix string, client func(testing.TB) redis.Cmdable) leasetest.Namespace {
	keys := &Store{prefix: prefix}
	ns.ForgetCluster = func(tb testing.TB, cluster string) {
		if err := client(tb).Del(context.Background(), keys.leaseKey(cluster), keys.layoutKey(cluster)).Err(); err != nil {
			tb.Fatalf("delete the keys of cluster %q: %v", cluster, err)
		}
	}
	ns.ForgetWorker = func(tb testing.TB, cluster string, workerID int64) {
		id := strconv.FormatInt(workerID, 10)
		err := client(tb).HDel(context.Background(), keys.leaseKey(cluster), id+":t", id+":h", id+":e", id+":l").Err()
		if err != nil {
			tb.Fatalf("delete the fields of worker %d in cluster %q: %v", workerID, cluster, err)
		}
	}
	return ns
}

// keysUnder lists the keys that start with prefix (which holds no glob
// characters).
func keysUnder(ctx context.Context, tb testing.TB, c *redis.Client, prefix string) []string {
	tb.Helper()
	var keys []string
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Errorf("scan %s*: %v", prefix, err)
	}
	return keys
}

// rig is a Store under a fresh prefix, with a client of its own for
// looking at and editing the keys behind the Store's back.
type rig struct {
	*Store
	raw    *redis.Client
	prefix string
}

func newRig(tb testing.TB) *rig {
	tb.Helper()
	prefix := freshPrefix(tb)
	raw := newTestClient(tb)
	return &rig{Store: New(newTestClient(tb), Options{Prefix: prefix}), raw: raw, prefix: prefix}
}

// another returns a Store on the same keys through a client of its own, as
// another process would have.
func (r *rig) another(tb testing.TB) *Store {
	tb.Helper()
	return New(newTestClient(tb), Options{Prefix: r.prefix})
}

// redisNowMS is Redis's clock in Unix milliseconds.
func (r *rig) redisNowMS(tb testing.TB) int64 {
	tb.Helper()
	now, err := r.raw.Time(tb.Context()).Result()
	if err != nil {
		tb.Fatalf("TIME: %v", err)
	}
	return now.UnixMilli()
}

func request(cluster, token string, maxWorkerID int64) workerlease.AcquireRequest {
	return workerlease.AcquireRequest{
		Cluster:     cluster,
		MaxWorkerID: maxWorkerID,
		Token:       token,
		Holder:      "redislease test",
		TTL:         time.Minute,
		NowMS:       time.Now().UnixMilli(),
	}
}

func mustAcquire(tb testing.TB, st workerlease.Store, req workerlease.AcquireRequest) workerlease.Lease {
	tb.Helper()
	l, err := st.Acquire(tb.Context(), req)
	if err != nil {
		tb.Fatalf("Acquire(cluster %q, token %q): %v", req.Cluster, req.Token, err)
	}
	return l
}

// closedAddr returns a local address nothing listens on.
func closedAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
