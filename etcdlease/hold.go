package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idalloc/idalloc/workerlease"
)

// Renew keeps the etcd lease of token's grant alive and raises
// last_timestamp_ms to lastTimestampMS if that is larger. etcd renews a
// lease to the TTL it was granted with, so ttl is not used; ExpiresAt
// reports the TTL etcd renewed to. Errors: workerlease.ErrNotAssigned (never
// held, or released), workerlease.ErrTokenMismatch (another token holds or
// last held it), workerlease.ErrLeaseExpired (token's etcd lease ran out:
// refused even if no one took the ID over, yet lastTimestampMS is still
// recorded); any other error is a fault.
func (s *Store) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (workerlease.Lease, error) {
	l, err := retry(func() (workerlease.Lease, error) {
		return s.renew(ctx, cluster, workerID, token, lastTimestampMS)
	})
	if err != nil {
		return workerlease.Lease{}, fmt.Errorf("renew worker ID %d in cluster %q: %w", workerID, cluster, err)
	}
	return l, nil
}

func (s *Store) renew(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) (workerlease.Lease, error) {
	w, err := s.readWorker(ctx, cluster, workerID)
	if err != nil {
		return workerlease.Lease{}, err
	}
	if !w.heldBy(token) {
		return workerlease.Lease{}, s.refuse(ctx, w, token, lastTimestampMS)
	}
	// The keep-alive goes first and the guarded write after: when the write
	// finds the hold key unchanged, the lease was alive after etcd renewed
	// it, so the renewal counts from then.
	sent := time.Now()
	ka, err := s.c.KeepAliveOnce(ctx, w.hold.Lease)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return workerlease.Lease{}, errLostRace // it just ran out: read again
	case err != nil:
		return workerlease.Lease{}, fmt.Errorf("keep etcd lease alive: %w", err)
	}
	ms := max(w.last.LastTimestampMS, lastTimestampMS)
	var then []clientv3.Op
	if ms > w.last.LastTimestampMS {
		then = append(then, clientv3.OpPut(w.lastKey, encode(lastValue{LastTimestampMS: ms, Token: token})))
	}
	if err := s.guarded(ctx, w, then...); err != nil {
		return workerlease.Lease{}, err
	}
	return workerlease.Lease{
		Cluster:  cluster,
		WorkerID: workerID,
		Token:    token,
		Holder:   w.hold.Holder,
		// etcd has no clock to ask; like the grant, the renewal is timed
		// from when its request left (at or before etcd's own start of the
		// new TTL), plus the TTL etcd reports.
		ExpiresAt:       sent.Add(time.Duration(ka.TTL) * time.Second).UTC(),
		LastTimestampMS: ms,
	}, nil
}

// Release frees the worker ID if token holds it: one transaction deletes
// the hold key and records lastTimestampMS (raised as in Renew) with no
// token, so the next holder starts after it and token's later calls get
// ErrNotAssigned; the etcd lease is then revoked. Errors as Renew.
func (s *Store) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	_, err := retry(func() (struct{}, error) {
		return struct{}{}, s.release(ctx, cluster, workerID, token, lastTimestampMS)
	})
	if err != nil {
		return fmt.Errorf("release worker ID %d in cluster %q: %w", workerID, cluster, err)
	}
	return nil
}

func (s *Store) release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	w, err := s.readWorker(ctx, cluster, workerID)
	if err != nil {
		return err
	}
	if !w.heldBy(token) {
		return s.refuse(ctx, w, token, lastTimestampMS)
	}
	ms := max(w.last.LastTimestampMS, lastTimestampMS)
	err = s.guarded(ctx, w,
		clientv3.OpDelete(w.holdKey),
		clientv3.OpPut(w.lastKey, encode(lastValue{LastTimestampMS: ms})))
	if err != nil {
		return err
	}
	if alive(ctx) {
		// Best effort: the lease now holds no key and ends by itself.
		_, _ = s.c.Revoke(ctx, w.hold.Lease)
	}
	return nil
}

// refuse says why token does not hold the worker ID, from the keys as read.
// When its own lease expired, it still raises the last timestamp, guarded
// against a grant in between: the late holder may have issued IDs up to it,
// and the next holder must start after them.
func (s *Store) refuse(ctx context.Context, w workerKeys, token string, lastTimestampMS int64) error {
	switch {
	case w.holdRev != 0:
		return workerlease.ErrTokenMismatch
	case w.last.Token == "":
		return workerlease.ErrNotAssigned
	case w.last.Token != token:
		return workerlease.ErrTokenMismatch
	}
	if lastTimestampMS > w.last.LastTimestampMS {
		err := s.guarded(ctx, w, clientv3.OpPut(w.lastKey, encode(lastValue{LastTimestampMS: lastTimestampMS, Token: token})))
		if err != nil {
			return err
		}
	}
	return workerlease.ErrLeaseExpired
}

// workerKeys are one worker ID's two keys as read at one revision.
type workerKeys struct {
	holdKey, lastKey string
	hold             holdValue
	holdRev          int64 // mod revision; 0: absent
	last             lastValue
	lastRev          int64 // mod revision; 0: absent
}

func (w workerKeys) heldBy(token string) bool { return w.holdRev != 0 && w.hold.Token == token }

// readWorker reads both keys in one transaction, so they are of one
// revision.
func (s *Store) readWorker(ctx context.Context, cluster string, workerID int64) (workerKeys, error) {
	w := workerKeys{holdKey: s.holdKey(cluster, workerID), lastKey: s.lastKey(cluster, workerID)}
	resp, err := s.c.Txn(ctx).Then(clientv3.OpGet(w.holdKey), clientv3.OpGet(w.lastKey)).Commit()
	if err != nil {
		return workerKeys{}, fmt.Errorf("read worker keys: %w", err)
	}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		if err := decode(w.holdKey, kvs[0].Value, &w.hold); err != nil {
			return workerKeys{}, err
		}
		w.holdRev = kvs[0].ModRevision
	}
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		if err := decode(w.lastKey, kvs[0].Value, &w.last); err != nil {
			return workerKeys{}, err
		}
		w.lastRev = kvs[0].ModRevision
	}
	return w, nil
}

// guarded applies ops only if both keys are still as w read them (a hold
// key gone with its lease, a grant, another call of the same token all
// change one); errLostRace if not. With no ops it still proves, at a revision
// after the caller's earlier steps, that nothing changed.
func (s *Store) guarded(ctx context.Context, w workerKeys, ops ...clientv3.Op) error {
	resp, err := s.c.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(w.holdKey), "=", w.holdRev),
		clientv3.Compare(clientv3.ModRevision(w.lastKey), "=", w.lastRev),
	).Then(ops...).Commit()
	switch {
	case err != nil:
		return err
	case !resp.Succeeded:
		return errLostRace
	}
	return nil
}

// retry runs try again after each lost race, at most raceTries times.
func retry[T any](try func() (T, error)) (T, error) {
	for n := 1; ; n++ {
		v, err := try()
		if !errors.Is(err, errLostRace) || n == raceTries {
			if err != nil && errors.Is(err, errLostRace) {
				err = fmt.Errorf("%d tries in a row: %w", n, err)
			}
			return v, err
		}
	}
}
