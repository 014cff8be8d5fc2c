package redistest_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/internal/redistest"
)

// TestCluster: the cluster serves every slot on three primaries, a
// redis+cluster:// DSN reaches it, and FlushAll and Restart each leave it
// empty and ok.
func TestCluster(t *testing.T) {
	rc := redistest.StartCluster(t)
	// go-redis names the scheme redis://; redislease.Open takes the "+cluster".
	o, err := redis.ParseClusterURL(strings.Replace(rc.DSN(), "redis+cluster://", "redis://", 1))
	if err != nil {
		t.Fatalf("ParseClusterURL(%q): %v", rc.DSN(), err)
	}
	if len(o.Addrs) != 3 {
		t.Errorf("DSN %q names %d nodes, want 3", rc.DSN(), len(o.Addrs))
	}
	c := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = c.Close() })

	for _, forget := range []struct {
		name string
		do   func(testing.TB)
	}{
		{"FlushAll", rc.FlushAll},
		{"Restart", rc.Restart},
	} {
		t.Run(forget.name, func(t *testing.T) {
			ctx := t.Context()
			for i := range 30 {
				if err := c.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
					t.Fatalf("SET: %v", err)
				}
			}
			if got := keysPerMaster(t, c); len(got) != 3 || got[0] == 0 || got[1] == 0 || got[2] == 0 {
				t.Errorf("keys per primary %v, want 3 primaries holding some", got)
			}
			forget.do(t)
			if got := keysPerMaster(t, c); len(got) != 3 || got[0]+got[1]+got[2] != 0 {
				t.Errorf("keys per primary after %s: %v, want 3 primaries holding none", forget.name, got)
			}
		})
	}
}

// keysPerMaster is DBSIZE of each primary go-redis finds, sorted.
func keysPerMaster(t *testing.T, c *redis.ClusterClient) []int64 {
	t.Helper()
	var mu sync.Mutex
	var n []int64
	err := c.ForEachMaster(t.Context(), func(ctx context.Context, node *redis.Client) error {
		size, err := node.DBSize(ctx).Result()
		mu.Lock()
		n = append(n, size)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatalf("DBSIZE on each primary: %v", err)
	}
	slices.Sort(n)
	return n
}
