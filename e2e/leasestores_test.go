package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/internal/etcdtest"
)

// leaseStore is one lease.driver the instances of a test can lease from.
type leaseStore struct {
	name string
	// config returns the "lease" object of the instances' config and a
	// cluster of the test's own; it skips t when the store cannot run here.
	config func(t *testing.T) (lease map[string]any, cluster string)
}

// leaseStores are the SQL store (the instances' MariaDB), the Redis on this
// machine (IDALLOC_TEST_REDIS_ADDR overrides 127.0.0.1:6379; the test's
// keys are deleted at cleanup) and a private etcd.
func leaseStores() []leaseStore {
	return []leaseStore{
		{"sql", func(*testing.T) (map[string]any, string) { return map[string]any{"driver": "sql"}, "e2e" }},
		{"redis", func(t *testing.T) (map[string]any, string) {
			addr := os.Getenv("IDALLOC_TEST_REDIS_ADDR")
			if addr == "" {
				addr = "127.0.0.1:6379"
			}
			c := redis.NewClient(&redis.Options{Addr: addr})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := c.Ping(ctx).Err(); err != nil {
				c.Close()
				t.Skipf("no Redis at %s (%v): skipping the redis lease store", addr, err)
			}
			// Redis is shared: a cluster of the test's own keeps its keys apart.
			cluster := "e2e-" + randomHex(t)
			t.Cleanup(func() {
				defer c.Close()
				ctx := context.Background()
				iter := c.Scan(ctx, 0, "*"+cluster+"*", 100).Iterator()
				for iter.Next(ctx) {
					c.Del(ctx, iter.Val())
				}
			})
			return map[string]any{"driver": "redis", "dsn": "redis://" + addr + "/0"}, cluster
		}},
		{"etcd", func(t *testing.T) (map[string]any, string) {
			srv := etcdtest.Start(t)
			return map[string]any{"driver": "etcd", "dsn": srv.DSN()}, "e2e"
		}},
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
