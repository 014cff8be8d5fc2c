package redislease

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/internal/advancetest"
	"github.com/idalloc/idalloc/internal/layouttest"
	"github.com/idalloc/idalloc/internal/redistest"
	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

// testCluster is the Redis Cluster the cluster tests run on: the one
// IDALLOC_TEST_REDIS_CLUSTER names ("host:port,host:port,…"), else a
// private one of three primaries on loopback, which skips tb without
// redis-server and redis-cli.
func testCluster(tb testing.TB) []string {
	tb.Helper()
	if v := os.Getenv("IDALLOC_TEST_REDIS_CLUSTER"); v != "" {
		return strings.Split(v, ",")
	}
	return redistest.StartCluster(tb).Addrs()
}

// newClusterClient returns a client of its own on the cluster of addrs,
// closed at tb's cleanup.
func newClusterClient(tb testing.TB, addrs []string) *redis.ClusterClient {
	tb.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Skipf("Redis Cluster at %v does not answer: %v", addrs, err)
	}
	return c
}

// freshClusterPrefix is freshPrefix on the cluster: its keys, on whichever
// primary, are deleted at tb's cleanup.
func freshClusterPrefix(tb testing.TB, addrs []string) string {
	tb.Helper()
	c := newClusterClient(tb, addrs)
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
	addrs := testCluster(t)
	tg := leasetest.Target{
		Fresh: func(tb testing.TB) leasetest.Namespace {
			prefix := freshClusterPrefix(tb, addrs)
			client := func(tb testing.TB) redis.Cmdable { return newClusterClient(tb, addrs) }
			return forgetScoped(leasetest.Namespace{
				Open: func(tb testing.TB) workerlease.Store {
					return New(newClusterClient(tb, addrs), Options{Prefix: prefix})
				},
				Forget: func(tb testing.TB) { deleteClusterKeys(tb, newClusterClient(tb, addrs), prefix) },
			}, prefix, client)
		},
		TTL: 400 * time.Millisecond,
	}
	leasetest.Run(t, tg)
	layouttest.Run(t, tg)
}

// TestClusterKeySlot checks keySlot, which the other tests trust, against
// CLUSTER KEYSLOT, and Open's redis+cluster:// against a real cluster.
func TestClusterKeySlot(t *testing.T) {
	addrs := testCluster(t)
	c := newClusterClient(t, addrs)
	st, err := Open("redis+cluster://"+addrs[0]+"?addr="+strings.Join(addrs[1:], "&addr="),
		Options{Prefix: freshClusterPrefix(t, addrs)})
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

// TestClusterAdvanceLeases runs the advance suite on Redis Cluster, where
// the clusters' hashes lie on different primaries and SCAN sees one's keys.
func TestClusterAdvanceLeases(t *testing.T) {
	addrs := testCluster(t)
	advancetest.Leases(t, func(tb testing.TB) advancetest.Store {
		return New(newClusterClient(tb, addrs), Options{Prefix: freshClusterPrefix(tb, addrs)})
	})
}

// TestClusterAdvanceScansEveryPrimary: clusters whose hashes lie on every
// primary are each found and raised, through a Store from Open as idalloc
// advance has.
func TestClusterAdvanceScansEveryPrimary(t *testing.T) {
	addrs := testCluster(t)
	prefix := freshClusterPrefix(t, addrs)
	st, err := Open("redis+cluster://"+addrs[0]+"?addr="+strings.Join(addrs[1:], "&addr="), Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var clusters []string
	for i := range 12 {
		clusters = append(clusters, "c"+strconv.Itoa(i))
		mustAcquire(t, st, request(clusters[i], "token-"+clusters[i], 3))
	}
	slices.Sort(clusters)

	// Where the hashes landed: on every primary, or the test proves little.
	c := newClusterClient(t, addrs)
	var mu sync.Mutex
	primaries, holding := 0, 0
	err = c.ForEachMaster(t.Context(), func(ctx context.Context, node *redis.Client) error {
		keys, _, err := node.Scan(ctx, 0, prefix+"*", 1000).Result()
		mu.Lock()
		primaries++
		if len(keys) > 0 {
			holding++
		}
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatalf("scan the primaries: %v", err)
	}
	if holding < 2 || holding < primaries {
		t.Fatalf("the %d clusters' keys lie on %d of %d primaries, want every one", len(clusters), holding, primaries)
	}

	floor := time.Now().Add(time.Hour).UnixMilli()
	var raised []string
	err = st.AdvanceLeases(t.Context(), floor, false, func(cluster string, _, _, toMS int64) {
		if toMS >= floor {
			raised = append(raised, cluster)
		}
	})
	if err != nil {
		t.Fatalf("AdvanceLeases: %v", err)
	}
	if !slices.Equal(raised, clusters) {
		t.Errorf("AdvanceLeases raised clusters %q on %d primaries, want %q", raised, holding, clusters)
	}
}
