package redislease

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// advanceScript raises every worker ID's last_timestamp_ms in one cluster's
// hash to at least a floor; one script, so each check and raise is one
// atomic step that a renew cannot split. KEYS: lease hash. ARGV: the floor,
// "1" for a dry run (nothing written). Returns {id, before, after, …}.
var advanceScript = redis.NewScript(luaPrelude + `
local key, floor, dry = KEYS[1], ARGV[1], ARGV[2] == '1'
local out = {}
local flat = redis.call('HGETALL', key)
for i = 1, #flat, 2 do
  local id = string.match(flat[i], '^(%d+):l$')
  if id then
    local last, to = flat[i + 1], flat[i + 1]
    if greater(floor, last) then
      to = floor
      if not dry then redis.call('HSET', key, flat[i], floor) end
    end
    table.insert(out, id)
    table.insert(out, last)
    table.insert(out, to)
  end
end
return out
`)

// AdvanceLeases raises the last_timestamp_ms of every worker ID of every
// cluster under the Store's prefix to at least toMS, so that the next
// holder of each starts after it (idalloc advance, after Redis lost
// writes). Per cluster one script checks and raises each ID, never
// lowering one; a lease stays held. With dryRun nothing is written. each
// is called once per worker ID, clusters and IDs in order, with the value
// before and after (the same when it was at or past toMS already).
//
// The clusters are found with SCAN, on every primary of a Redis Cluster.
func (s *Store) AdvanceLeases(ctx context.Context, toMS int64, dryRun bool, each func(cluster string, workerID, fromMS, toMS int64)) error {
	if s.err != nil {
		return s.err
	}
	clusters, err := s.clusters(ctx)
	if err != nil {
		return fmt.Errorf("advance leases: list clusters: %w", err)
	}
	dry := "0"
	if dryRun {
		dry = "1"
	}
	for _, cluster := range clusters {
		reply, err := advanceScript.Run(ctx, s.c, []string{s.leaseKey(cluster)}, toMS, dry).StringSlice()
		if err == nil && len(reply)%3 != 0 {
			err = badReply(reply)
		}
		if err != nil {
			return fmt.Errorf("advance leases of cluster %q: %w", cluster, err)
		}
		type moved struct{ id, from, to int64 }
		var ms []moved
		for i := 0; i < len(reply); i += 3 {
			n, err := parseInts(reply[i : i+3])
			if err != nil {
				return fmt.Errorf("advance leases of cluster %q: %w", cluster, err)
			}
			ms = append(ms, moved{n[0], n[1], n[2]})
		}
		slices.SortFunc(ms, func(a, b moved) int { return cmp.Compare(a.id, b.id) })
		for _, m := range ms {
			each(cluster, m.id, m.from, m.to)
		}
	}
	return nil
}

// clusters lists, sorted, the clusters that have a lease hash under the
// Store's prefix.
func (s *Store) clusters(ctx context.Context) ([]string, error) {
	// The hash of cluster c is prefix+"{c}"; its layout key, which ends
	// in ":layout", does not match.
	match := escapeGlob(s.prefix) + "{*}"
	var mu sync.Mutex
	seen := map[string]bool{}
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, match, 1000).Iterator()
		for iter.Next(ctx) {
			rest := strings.TrimPrefix(iter.Val(), s.prefix)
			if name, ok := strings.CutPrefix(rest, "{"); ok && strings.HasSuffix(name, "}") {
				mu.Lock()
				seen[strings.TrimSuffix(name, "}")] = true
				mu.Unlock()
			}
		}
		return iter.Err()
	}
	var err error
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		// SCAN walks one node's keys only.
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	} else {
		err = scan(ctx, s.c)
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for name := range seen {
		if s.checkCluster(name) == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// escapeGlob quotes the characters SCAN's MATCH pattern gives a meaning.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
