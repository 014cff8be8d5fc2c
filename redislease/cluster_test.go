package redislease

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/internal/layouttest"
	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

// clusterAddrs are the nodes of a Redis Cluster to test on, from
// IDALLOC_TEST_REDIS_CLUSTER ("host:port,host:port,…"); such a cluster is
// rarely at hand, so the cluster tests skip without one.
func clusterAddrs(tb testing.TB) []string {
	tb.Helper()
	v := os.Getenv("IDALLOC_TEST_REDIS_CLUSTER")
	if v == "" {
		tb.Skip("no Redis Cluster: set IDALLOC_TEST_REDIS_CLUSTER=host:port,… to run")
	}
	return strings.Split(v, ",")
}

func newClusterClient(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs(tb)})
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Skipf("Redis Cluster at %v does not answer: %v", clusterAddrs(tb), err)
	}
	return c
}

// freshClusterPrefix is freshPrefix on the cluster: its keys, on whichever
// primary, are deleted at tb's cleanup.
func freshClusterPrefix(tb testing.TB) string {
	tb.Helper()
	c := newClusterClient(tb)
	prefix := "idalloc-test:" + randomHex(8) + ":"
	tb.Cleanup(func() { deleteClusterKeys(tb, c, prefix) })
	return prefix
}

// deleteClusterKeys deletes the keys under prefix on every primary.
func deleteClusterKeys(tb testing.TB, c *redis.ClusterClient, prefix string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var mu sync.Mutex
	var keys []string
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		tb.Errorf("scan %s*: %v", prefix, err)
	}
	for _, k := range keys {
		if err := c.Del(ctx, k).Err(); err != nil {
			tb.Errorf("delete test key %q: %v", k, err)
		}
	}
}

// TestClusterConformance runs the suites on Redis Cluster, where a script
// whose keys lay in two slots would be refused (CROSSSLOT).
func TestClusterConformance(t *testing.T) {
	tg := leasetest.Target{
		Fresh: func(tb testing.TB) leasetest.Namespace {
			prefix := freshClusterPrefix(tb)
			return forgetScoped(leasetest.Namespace{
				Open: func(tb testing.TB) workerlease.Store {
					return New(newClusterClient(tb), Options{Prefix: prefix})
				},
				Forget: func(tb testing.TB) { deleteClusterKeys(tb, newClusterClient(tb), prefix) },
			}, prefix, func(tb testing.TB) redis.Cmdable { return newClusterClient(tb) })
		},
		TTL: 400 * time.Millisecond,
	}
	leasetest.Run(t, tg)
	layouttest.Run(t, tg)
}

// TestClusterKeySlot checks keySlot, which the other tests trust, against
// CLUSTER KEYSLOT, and Open's redis+cluster:// against a real cluster.
func TestClusterKeySlot(t *testing.T) {
	c := newClusterClient(t)
	st, err := Open("redis+cluster://"+clusterAddrs(t)[0]+"?addr="+strings.Join(clusterAddrs(t)[1:], "&addr="),
		Options{Prefix: freshClusterPrefix(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for _, cluster := range []string{"c1", "east", "west", "a:b.c-d_e", strings.Repeat("x", 64)} {
		for _, k := range []string{st.leaseKey(cluster), st.layoutKey(cluster)} {
			want, err := c.ClusterKeySlot(t.Context(), k).Result()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
			}
			if got := keySlot(k); int64(got) != want {
				t.Errorf("keySlot(%q) = %d, want %d", k, got, want)
			}
		}
		l := mustAcquire(t, st, request(cluster, "token-a", 7))
		if err := st.CheckLayout(t.Context(), cluster, 0, 3); err != nil {
			t.Errorf("CheckLayout: %v", err)
		}
		if err := st.Release(t.Context(), cluster, l.WorkerID, l.Token, 1); err != nil {
			t.Errorf("Release: %v", err)
		}
	}
}
