package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idalloc/idalloc/workerlease"
)

// Acquire grants the preferred free worker ID of req.Cluster: among IDs
// that are free (never held, released, or whose etcd lease ran out) and
// whose last_timestamp_ms is at most req.NowMS, the lowest; failing that,
// the lowest free one. NowMS only ranks candidates; whether an ID is free
// is etcd's to say. The lease's TTL is req.TTL rounded up to whole seconds
// (and raised to etcd's own floor, about 2s by default); ExpiresAt reports
// the TTL etcd granted. Its input is the Service's, checked there
// (workerlease.Store). Errors: workerlease.ErrNoWorkerID; any other error is
// a fault (etcd unreachable, ctx ended).
func (s *Store) Acquire(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
	l, err := s.acquire(ctx, req)
	if err != nil {
		return workerlease.Lease{}, fmt.Errorf("acquire worker ID in cluster %q: %w", req.Cluster, err)
	}
	return l, nil
}

// grant is an etcd lease taken for a grant.
type grant struct {
	id  clientv3.LeaseID
	ttl time.Duration // as etcd granted it
	// sent is when the Grant request left. etcd starts the lease's clock
	// when it applies the request, later than this, so sent+ttl is at or
	// before the true expiry: an ExpiresAt a holder can trust.
	sent time.Time
}

func (s *Store) acquire(ctx context.Context, req workerlease.AcquireRequest) (l workerlease.Lease, err error) {
	// One etcd lease serves every try: a try that loses writes nothing.
	var g *grant
	defer func() {
		if err != nil && g != nil && alive(ctx) {
			// Best effort: an unused lease holds no key, and etcd ends it
			// after its TTL anyway. After a failed transaction whose outcome
			// is unknown, revoking also frees the ID it may have taken.
			_, _ = s.c.Revoke(ctx, g.id)
		}
	}()
	for try := 1; ; try++ {
		v, err := s.readCluster(ctx, req.Cluster)
		if err != nil {
			return l, err
		}
		// The first try takes the best candidate; after losses the callers
		// still racing spread over a growing number of the best ones, so
		// that one of them does not lose to all the others in turn.
		cands := v.candidates(req.MaxWorkerID, req.NowMS, 1<<min(try-1, 6))
		if len(cands) == 0 {
			return l, workerlease.ErrNoWorkerID
		}
		id := cands[rand.IntN(len(cands))]
		if g == nil {
			if g, err = s.grant(ctx, req.TTL); err != nil {
				return l, err
			}
		}
		l, err = s.claim(ctx, req, id, v.last[id], g)
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			g = nil // ran out over many tries; take a new one
		case !errors.Is(err, errLostRace):
			return l, err
		}
		if try == raceTries {
			return l, fmt.Errorf("%d tries in a row: %w", try, err)
		}
	}
}

func (s *Store) grant(ctx context.Context, ttl time.Duration) (*grant, error) {
	sent := time.Now()
	resp, err := s.c.Grant(ctx, ttlSeconds(ttl))
	if err != nil {
		return nil, fmt.Errorf("grant etcd lease: %w", err)
	}
	return &grant{id: resp.ID, ttl: time.Duration(resp.TTL) * time.Second, sent: sent}, nil
}

// claim is the grant's one transaction: the hold key is still absent and
// the last key still the one read, else errLostRace. Its success alone
// proves the grant; both keys are written together.
func (s *Store) claim(ctx context.Context, req workerlease.AcquireRequest, id int64, last lastEntry, g *grant) (workerlease.Lease, error) {
	holdKey, lastKey := s.holdKey(req.Cluster, id), s.lastKey(req.Cluster, id)
	holder := req.Holder
	resp, err := s.c.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(holdKey), "=", 0),
		clientv3.Compare(clientv3.ModRevision(lastKey), "=", last.rev), // 0: still absent
	).Then(
		clientv3.OpPut(holdKey, encode(holdValue{Token: req.Token, Holder: holder, Lease: g.id}), clientv3.WithLease(g.id)),
		clientv3.OpPut(lastKey, encode(lastValue{LastTimestampMS: last.ms, Token: req.Token})),
	).Commit()
	switch {
	case err != nil:
		return workerlease.Lease{}, err
	case !resp.Succeeded:
		return workerlease.Lease{}, errLostRace
	}
	return workerlease.Lease{
		Cluster:         req.Cluster,
		WorkerID:        id,
		Token:           req.Token,
		Holder:          holder,
		ExpiresAt:       g.sent.Add(g.ttl).UTC(),
		LastTimestampMS: last.ms,
		// No last key: never leased, or etcd forgot it (rebuilt, wiped).
		NoHistory: last.rev == 0,
	}, nil
}

// lastEntry is a last key as read: its timestamp and revision (0 when the
// key does not exist, which is also what etcd compares an absent key with).
type lastEntry struct {
	ms  int64
	rev int64
}

// clusterView is one cluster's keys at one revision.
type clusterView struct {
	held map[int64]bool
	last map[int64]lastEntry
	top  int64 // highest worker ID with any key; -1 if none
}

// readCluster reads every key of cluster in one range, so the view is of a
// single revision.
func (s *Store) readCluster(ctx context.Context, cluster string) (clusterView, error) {
	prefix := s.clusterPrefix(cluster)
	resp, err := s.c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return clusterView{}, fmt.Errorf("read cluster keys: %w", err)
	}
	v := clusterView{held: map[int64]bool{}, last: map[int64]lastEntry{}, top: -1}
	for _, kv := range resp.Kvs {
		kind, idText, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix), "/")
		if !ok {
			continue // the layout key
		}
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || id < 0 || strconv.FormatInt(id, 10) != idText {
			continue // not a key this package writes
		}
		switch kind {
		case "hold":
			v.held[id] = true
		case "last":
			var lv lastValue
			if err := decode(string(kv.Key), kv.Value, &lv); err != nil {
				return clusterView{}, err
			}
			v.last[id] = lastEntry{ms: lv.LastTimestampMS, rev: kv.ModRevision}
		default:
			continue
		}
		v.top = max(v.top, id)
	}
	return v, nil
}

// candidates returns up to k free worker IDs of [0, maxID], best first:
// IDs whose last timestamp is at most nowMS (a never-used ID counts as 0),
// lowest first, then the others, lowest first. It looks at no more IDs than
// the keys span plus k, however large maxID is.
func (v clusterView) candidates(maxID, nowMS int64, k int) []int64 {
	var good, rest []int64
	for id := int64(0); id <= maxID && len(good) < k; id++ {
		if id > v.top && nowMS < 0 && len(rest) >= k {
			// Every later ID is unused, so counts as timestamp 0, ahead of
			// this clock: none can displace what rest holds. (With a clock
			// at or past 0 they are all good, and good fills within k.)
			break
		}
		if v.held[id] {
			continue
		}
		if v.last[id].ms <= nowMS {
			good = append(good, id)
		} else if len(rest) < k {
			rest = append(rest, id)
		}
	}
	out := append(good, rest...)
	return out[:min(len(out), k)]
}
