package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/freeport"
	"github.com/redis/go-redis/v9"
)

// clusterNodes is how many primaries a Cluster has: the fewest Redis
// Cluster accepts.
const clusterNodes = 3

// Cluster is a private Redis Cluster of three primaries and no replicas,
// each node a Server of its own (its own port, bus port and directory, no
// persistence but its nodes.conf). Restart and FlushAll are meant for one
// test goroutine at a time.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts a three-node Redis Cluster for tb on loopback, made
// with redis-cli --cluster create, and waits until every node reports it
// ok; its nodes are killed at tb's cleanup. It skips tb when no
// redis-server or redis-cli binary is installed.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		tb.Skip("redistest: no redis-cli binary on PATH: skipping the private Redis Cluster")
	}
	c := &Cluster{}
	for range clusterNodes {
		// The bus port is named: the default, port+10000, may be past 65535.
		bus, err := freeport.Get()
		if err != nil {
			tb.Fatal(err)
		}
		c.nodes = append(c.nodes, Start(tb,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, c.Addrs()...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitOK(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// DSN is the cluster as a lease.dsn: redis+cluster:// with the further
// nodes as addr= options.
func (c *Cluster) DSN() string {
	addrs := c.Addrs()
	return "redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
}

// Restart kills every node and starts each again on its ports: without
// persistence the cluster comes back empty, with its slots where they were
// (nodes.conf). It waits until every node reports the cluster ok.
func (c *Cluster) Restart(tb testing.TB) {
	tb.Helper()
	for _, n := range c.nodes {
		n.Kill()
	}
	for _, n := range c.nodes {
		if err := n.start(); err != nil {
			tb.Fatalf("restart a Redis Cluster node: %v", err)
		}
	}
	if err := c.waitOK(); err != nil {
		tb.Fatal(err)
	}
}

// FlushAll runs FLUSHALL on every node.
func (c *Cluster) FlushAll(tb testing.TB) {
	tb.Helper()
	for _, n := range c.nodes {
		n.FlushAll(tb)
	}
}

// waitOK waits until every node sees every node and every slot served:
// before that a client may be told of too few primaries, and a SCAN over
// them would miss keys.
func (c *Cluster) waitOK() error {
	want := []string{
		"cluster_state:ok",
		"cluster_slots_assigned:16384",
		"cluster_known_nodes:" + strconv.Itoa(clusterNodes),
		"cluster_size:" + strconv.Itoa(clusterNodes),
	}
	deadline := time.Now().Add(startTimeout)
	for _, n := range c.nodes {
		rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		var info string
		var err error
		for !hasLines(info, want) {
			if time.Now().After(deadline) {
				_ = rc.Close()
				return fmt.Errorf("redis cluster node %s not ok after %v: %v\n%s", n.Addr(), startTimeout, err, info)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err = rc.ClusterInfo(ctx).Result()
			cancel()
			if !hasLines(info, want) {
				time.Sleep(50 * time.Millisecond)
			}
		}
		_ = rc.Close()
	}
	return nil
}

// hasLines reports whether text holds every one of lines as a line.
func hasLines(text string, lines []string) bool {
	have := map[string]bool{}
	for l := range strings.Lines(text) {
		have[strings.TrimSpace(l)] = true
	}
	for _, l := range lines {
		if !have[l] {
			return false
		}
	}
	return true
}
