package etcdlease

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// AdvanceLeases raises the last_timestamp_ms of every worker ID of every
// cluster under the Store's prefix to at least toMS, so that the next
// holder of each starts after it (idalloc advance, after etcd was restored
// from a snapshot). Each last key moves by a transaction that compares its
// revision with the one read, read again when a holder wrote it in
// between, and is never lowered; its token is kept, so a lease stays held
// and a late holder is still told its lease expired. With dryRun nothing is
// written. each is called once per worker ID, clusters and IDs in order,
// with the value before and after (the same when it was at or past toMS).
func (s *Store) AdvanceLeases(ctx context.Context, toMS int64, dryRun bool, each func(cluster string, workerID, fromMS, toMS int64)) error {
	resp, err := s.c.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("advance leases: read keys: %w", err)
	}
	type last struct {
		cluster string
		id      int64
		key     string
		value   lastValue
		rev     int64
	}
	var lasts []last
	for _, kv := range resp.Kvs {
		cluster, id, ok := parseLastKey(strings.TrimPrefix(string(kv.Key), s.prefix))
		if !ok {
			continue // a hold or layout key, or none of this package's
		}
		l := last{cluster: cluster, id: id, key: string(kv.Key), rev: kv.ModRevision}
		if err := decode(l.key, kv.Value, &l.value); err != nil {
			return fmt.Errorf("advance leases: %w", err)
		}
		lasts = append(lasts, l)
	}
	slices.SortFunc(lasts, func(a, b last) int { return cmp.Or(strings.Compare(a.cluster, b.cluster), cmp.Compare(a.id, b.id)) })
	for _, l := range lasts {
		from := l.value.LastTimestampMS
		if !dryRun && from < toMS {
			if from, err = s.raiseLast(ctx, l.key, l.value, l.rev, toMS); err != nil {
				return fmt.Errorf("advance lease of worker ID %d in cluster %q: %w", l.id, l.cluster, err)
			}
		}
		each(l.cluster, l.id, from, max(from, toMS))
	}
	return nil
}

// raiseLast puts toMS into the last key from the value v read at revision
// rev, reading again after each lost race; it returns the timestamp it
// moved from, which is at or past toMS when a holder got there first.
func (s *Store) raiseLast(ctx context.Context, key string, v lastValue, rev, toMS int64) (int64, error) {
	first := true
	return retry(func() (int64, error) {
		if !first {
			resp, err := s.c.Get(ctx, key)
			switch {
			case err != nil:
				return 0, err
			case len(resp.Kvs) == 0:
				// Last keys are never deleted.
				return 0, fmt.Errorf("etcd key %q vanished", key)
			}
			if err := decode(key, resp.Kvs[0].Value, &v); err != nil {
				return 0, err
			}
			rev = resp.Kvs[0].ModRevision
		}
		first = false
		if v.LastTimestampMS >= toMS {
			return v.LastTimestampMS, nil
		}
		raised := lastValue{LastTimestampMS: toMS, Token: v.Token}
		resp, err := s.c.Txn(ctx).If(
			clientv3.Compare(clientv3.ModRevision(key), "=", rev),
		).Then(clientv3.OpPut(key, encode(raised))).Commit()
		switch {
		case err != nil:
			return 0, err
		case !resp.Succeeded:
			return 0, errLostRace
		}
		return v.LastTimestampMS, nil
	})
}

// parseLastKey splits "<cluster>/last/<id>" (the cluster path-escaped),
// the part of a last key after the prefix.
func parseLastKey(rest string) (cluster string, id int64, ok bool) {
	escaped, tail, ok := strings.Cut(rest, "/")
	if !ok {
		return "", 0, false
	}
	idText, ok := strings.CutPrefix(tail, "last/")
	if !ok {
		return "", 0, false
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != idText {
		return "", 0, false
	}
	cluster, err = url.PathUnescape(escaped)
	if err != nil {
		return "", 0, false
	}
	return cluster, id, true
}
