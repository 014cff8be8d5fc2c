package workerlease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// keep is the session's goroutine: it renews every TTL/3 from the last
// renewal until the lease is lost, given up, or ctx ends (Close, Abandon).
func (s *Session) keep(ctx context.Context, cur *fence) {
	defer close(s.exited)
	ttl := s.svc.TTL()
	l := s.lease
	next := cur.deadline - ttl + s.cfg.Margin + ttl/3 // a third of the TTL after the last renewal was sent
	for {
		if d := next - s.since(s.cfg.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				s.stopped()
				return
			case <-s.giveUp:
				t.Stop()
				s.releaseGranted(ctx, cur.reserve)
				s.cfg.Logger.Info("worker lease given up", "cluster", l.Cluster, "worker_id", l.WorkerID)
				return
			case <-t.C:
			}
		}
		// A store call that ignores its context must not hold the session
		// open past its deadline: Done closes on time, so the Keeper moves
		// on, whenever the call returns.
		late := time.AfterFunc(cur.deadline-s.since(s.cfg.Now()), func() {
			s.end(fmt.Errorf("%w: no renewal succeeded before the local deadline", ErrLeaseLost))
		})
		f, err := s.renew(ctx, cur.deadline)
		late.Stop()
		switch {
		case ctx.Err() != nil:
			s.stopped()
			return
		case err == nil && s.since(s.cfg.Now()) >= cur.deadline:
			// A store that ignored the deadline answered after it: the
			// lease was not provable for a while, and sessions do not come
			// back. Give it back so the worker ID need not wait for the TTL.
			s.cfg.Logger.Error("worker lease lost: the renewal succeeded after the local deadline",
				"cluster", l.Cluster, "worker_id", l.WorkerID)
			s.end(fmt.Errorf("%w: the renewal succeeded after the local deadline", ErrLeaseLost))
			s.releaseGranted(ctx, f.reserve)
			return
		case err == nil:
			if !s.publish(f) {
				if errors.Is(s.Err(), ErrLeaseLost) {
					// The deadline passed while the renewal was in
					// flight (by the timers' clock, if s.cfg.Now's
					// disagrees): as above.
					s.releaseGranted(ctx, f.reserve)
					return
				}
				// Ended meanwhile, by GiveUp, Close or Abandon.
				select {
				case <-ctx.Done():
					s.stopped()
				case <-s.giveUp:
					s.releaseGranted(ctx, f.reserve)
				}
				return
			}
			cur, next = f, f.deadline-ttl+s.cfg.Margin+ttl/3
		case errLeaseGone(err):
			s.cfg.Logger.Error("worker lease lost: renewal refused", "err", err,
				"cluster", l.Cluster, "worker_id", l.WorkerID)
			s.end(fmt.Errorf("%w: renewal refused: %w", ErrLeaseLost, err))
			return
		case s.since(s.cfg.Now()) >= cur.deadline:
			s.cfg.Logger.Error("worker lease lost: no renewal succeeded before the local deadline",
				"err", err, "cluster", l.Cluster, "worker_id", l.WorkerID)
			s.end(fmt.Errorf("%w: no renewal succeeded before the local deadline: %w", ErrLeaseLost, err))
			return
		default:
			at := s.since(s.cfg.Now())
			s.cfg.Logger.Warn("renew worker lease failed; retrying", "err", err,
				"cluster", l.Cluster, "worker_id", l.WorkerID, "seconds_left", (cur.deadline - at).Seconds())
			next = min(at+s.jitter(s.cfg.RetryInterval), cur.deadline)
		}
	}
}

// stopped marks the goroutine's end by Close or Abandon: the lease may still
// be held, for Close to release.
func (s *Session) stopped() {
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
}

// renew sends one renewal that reserves timestamps up to a TTL past now; it
// must land before deadline (since base), the end of the current proof.
// The fence it returns ends TTL−Margin after the renewal was sent.
func (s *Session) renew(ctx context.Context, deadline time.Duration) (*fence, error) {
	ttl := s.svc.TTL()
	now := s.cfg.Now()
	at := s.since(now)
	if at >= deadline {
		return nil, errors.New("local deadline passed")
	}
	reserve := now.UnixMilli() + ceilMS(ttl)
	rctx, cancel := context.WithTimeout(ctx, deadline-at)
	defer cancel()
	l := s.lease
	r, err := s.svc.Renew(rctx, l.Cluster, l.WorkerID, l.Token, reserve)
	if err != nil {
		return nil, err
	}
	return &fence{lease: r, deadline: at + ttl - s.cfg.Margin, reserve: reserve}, nil
}

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
