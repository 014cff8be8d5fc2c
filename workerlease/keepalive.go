package workerlease

import (
	"context"
	"errors"
	"time"
)

// outcome says why keep stopped keeping a lease.
type outcome int

const (
	stopped outcome = iota // ctx ended or Close: the lease may still be held
	lost                   // deadline passed or the store refused: nothing to release
	gaveUp                 // GiveUp: released (or tried to), wait before the next
)

// run is the keeper goroutine: acquire, keep, and acquire again after a loss.
func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	ttl := k.svc.TTL()
	backoff := k.retry
	for {
		l, sent, err := k.acquire(ctx)
		k.noFree.Store(errors.Is(err, ErrNoWorkerID))
		if ctx.Err() != nil {
			if err == nil {
				k.final = &l // granted as we were stopped: Close releases it
			}
			return
		}
		if err != nil {
			wait := k.jitter(backoff)
			k.log.Warn("acquire worker lease failed; retrying", "err", err, "retry_in", wait)
			if !sleep(ctx, wait) {
				return
			}
			backoff = min(2*backoff, max(ttl, k.retry))
			continue
		}
		backoff = k.retry
		k.log.Info("worker lease acquired", "cluster", l.Cluster, "worker_id", l.WorkerID,
			"last_timestamp_ms", l.LastTimestampMS)
		switch k.keep(ctx, l, sent) {
		case stopped:
			k.final = &l
			return
		case gaveUp:
			// A generator that gave up will likely give up the next lease
			// too if it comes at once; pacing bounds the load on the store.
			if !sleep(ctx, k.retry) {
				return
			}
		}
	}
}

func (k *Keeper) acquire(ctx context.Context) (Lease, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, k.svc.TTL()/3)
	defer cancel()
	sent := k.now()
	l, err := k.svc.acquire(ctx, "", "", sent)
	return l, sent, err
}

// keep renews acq until it is lost, given up, or ctx ends. acqSent, the time
// Acquire was sent, bounds the lease until the first renewal succeeds; that
// renewal is sent at once, since no ID may be issued before a reservation is
// stored.
func (k *Keeper) keep(ctx context.Context, acq Lease, acqSent time.Time) outcome {
	ttl := k.svc.TTL()
	deadline := k.since(acqSent) + ttl - k.margin
	next := k.since(acqSent)
	var cur *held // published state; nil until the first renewal
	defer func() { k.revoke(cur) }()
	for {
		if d := next - k.since(k.now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return stopped
			case <-k.giveUp:
				t.Stop()
				if cur != nil && k.state.Load() != cur && !k.isClosed() {
					return k.release(ctx, cur)
				}
				continue // a hint left over from an earlier lease
			case <-t.C:
			}
		}
		now := k.now()
		at := k.since(now)
		if at >= deadline {
			k.log.Error("worker lease lost: no renewal succeeded before the local deadline",
				"cluster", acq.Cluster, "worker_id", acq.WorkerID)
			return lost
		}
		reserve := now.UnixMilli() + ceilMS(ttl)
		rctx, cancel := context.WithTimeout(ctx, deadline-at)
		l, err := k.svc.Renew(rctx, acq.Cluster, acq.WorkerID, acq.Token, reserve)
		cancel()
		switch {
		case ctx.Err() != nil:
			return stopped
		case err == nil:
			h := &held{lease: l, deadline: at + ttl - k.margin, reserve: reserve}
			if cur == nil && k.onLease != nil {
				k.onLease(acq)
			}
			if !k.publish(cur, h) {
				if k.isClosed() {
					return stopped
				}
				return k.release(ctx, h)
			}
			cur, deadline, next = h, h.deadline, at+ttl/3
		case errLeaseGone(err):
			k.log.Error("worker lease lost: renewal refused", "err", err,
				"cluster", acq.Cluster, "worker_id", acq.WorkerID)
			return lost
		default:
			k.log.Warn("renew worker lease failed; retrying", "err", err,
				"cluster", acq.Cluster, "worker_id", acq.WorkerID,
				"seconds_left", (deadline - at).Seconds())
			next = min(at+k.jitter(k.retry), deadline)
		}
	}
}

// release gives a revoked lease back so that its worker ID need not wait for
// the TTL.
func (k *Keeper) release(ctx context.Context, h *held) outcome {
	ctx, cancel := context.WithTimeout(ctx, k.svc.TTL()/3)
	defer cancel()
	l := h.lease
	if err := k.svc.Release(ctx, l.Cluster, l.WorkerID, l.Token, h.reserve); err != nil {
		k.log.Warn("release given-up worker lease failed; it will expire", "err", err,
			"cluster", l.Cluster, "worker_id", l.WorkerID)
	} else {
		k.log.Info("worker lease given up", "cluster", l.Cluster, "worker_id", l.WorkerID)
	}
	return gaveUp
}

func (k *Keeper) isClosed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.closed
}

func (k *Keeper) since(t time.Time) time.Duration { return t.Sub(k.base) }

// jitter returns a wait of d/2 plus a random part of up to d/2 ("equal
// jitter"). After a store outage every instance's renewals and acquisitions
// failed at about the same moment; without it they would all retry in
// lockstep, each retry a burst on the store just back. The fixed half keeps
// one keeper's retries at least d/2 apart, and no wait is longer than d, so
// a renewal is retried at least as often as RetryInterval says.
func (k *Keeper) jitter(d time.Duration) time.Duration { return d/2 + k.randN(d/2+1) }

// ceilMS rounds d up to whole milliseconds so a reservation never falls short
// of the TTL it covers.
func ceilMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// sleep waits d unless ctx ends first; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// errLeaseGone reports renewal errors that mean the lease is no longer this
// holder's, so retrying cannot help.
func errLeaseGone(err error) bool {
	return errors.Is(err, ErrNotAssigned) || errors.Is(err, ErrTokenMismatch) || errors.Is(err, ErrLeaseExpired)
}
