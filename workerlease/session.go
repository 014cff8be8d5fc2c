package workerlease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Why a Session ended, as Err reports it.
var (
	// ErrLeaseLost: no renewal succeeded before the local deadline, or the
	// store refused one (the lease expired or changed hands).
	ErrLeaseLost = errors.New("worker lease lost")
	// ErrSessionClosed: Close, Abandon or GiveUp ended the session.
	ErrSessionClosed = errors.New("worker lease session closed")
)

// Session is one worker-ID lease, kept alive while it lasts, in the mould of
// etcd's concurrency.Session: NewSession acquires it (or takes over a grant
// already made, SessionConfig.Lease), a goroutine of its own
// renews it every TTL/3, Done is closed once when the lease can no longer be
// proven held, and Close releases it. Sessions do not come back: after a
// loss, the holder starts a new one (Keeper does that).
//
// Fence is the check every ID issued under the lease passes. The local
// deadline is the monotonic time at which the last successful renewal was
// sent, plus TTL minus Margin; the store measures the TTL from when it
// received that renewal, by its own clock, so a holder whose renewals stall
// stops issuing before the store can give the worker ID to another holder.
// Each renewal also reserves timestamps: it stores R = Unix ms at sending +
// TTL as the worker ID's last_timestamp_ms, and Fence refuses IDs timestamped
// after R. The next holder starts after R, so it never issues an ID at or
// below this holder's, whatever its clock says.
type Session struct {
	cfg   SessionConfig
	svc   *Service
	base  time.Time // origin of fence.deadline, so Fence compares integers
	lease Lease     // as granted
	// opens is when (since base) the fence first lets an ID through: 0, or
	// for a grant with no history the end of the wait for a forgotten
	// holder. Set before the session is shared, read-only after.
	opens time.Duration

	// state is the published fence; nil once the session ended. It is
	// replaced whole, so Fence sees one consistent snapshot in one load.
	state atomic.Pointer[fence]

	// mu orders the end of the session (revoke) with publishing a renewal,
	// so a renewal in flight can never bring an ended session back.
	mu     sync.Mutex
	ended  bool
	err    error
	done   chan struct{}
	cancel context.CancelFunc // stops the keepalive goroutine
	giveUp chan struct{}      // closed by GiveUp
	gave   sync.Once

	// exited is closed when the keepalive goroutine has returned; held
	// says whether it returned still holding the lease (stopped by Close
	// or Abandon), so that Close knows whether there is anything to release.
	exited chan struct{}
	held   bool

	closeOnce sync.Once
	closeErr  error
}

// fence is one renewal's proof: the lease as renewed, until when it may be
// used, and the timestamps it reserved.
type fence struct {
	lease    Lease
	deadline time.Duration // since Session.base
	reserve  int64         // Unix ms the holder's IDs must not pass
}

func (f *fence) allows(sinceBase time.Duration, unixMS int64) bool {
	return sinceBase < f.deadline && unixMS <= f.reserve
}

// NewSession acquires a worker ID of cfg.Cluster (or takes cfg.Lease, a grant
// already made) and renews it once, so that a timestamp reservation is
// stored before Fence lets any ID through; then it keeps the lease in a
// goroutine of its own until Close, Abandon, GiveUp or a loss. ctx bounds
// the acquisition and the first renewal only. The Lease's LastTimestampMS
// is the previous holders' reservation: a generator under this session
// must start after it. A grant with no history (Lease.NoHistory) is held
// and renewed at once, but Fence refuses every ID until TTL + ClockSkew
// after it was asked for, or for a wrapped grant after NewSession was
// called (Opens), since the store may have forgotten a holder that is
// still issuing. Errors: ErrInvalidConfig; ErrNoWorkerID; ErrUnavailable;
// the error of cfg.CheckLayout; ErrLeaseLost when the first renewal is
// refused or cannot be made before the deadline; ctx's error (a lease
// granted meanwhile, or wrapped, is released).
func NewSession(ctx context.Context, cfg SessionConfig) (*Session, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, svc: cfg.Service, base: cfg.Now(), done: make(chan struct{}),
		giveUp: make(chan struct{}), exited: make(chan struct{})}
	ttl := s.svc.TTL()
	actx, cancel := context.WithTimeout(ctx, ttl/3)
	// sent is when the grant was asked for: the origin of the wait of a
	// grant with no history and of the first renewal's deadline. A wrapped
	// grant was asked for before this call, so sent is later than that,
	// which is still safe: the wait (TTL + ClockSkew from sent) ends later
	// than it must, never sooner; and the deadline only bounds the first
	// renewal's retries, since the fence opens on a renewal alone, counted
	// from when that renewal was sent, and a grant the store expired
	// meanwhile is refused at it (ErrLeaseLost).
	sent := cfg.Now()
	if cfg.Lease != nil {
		s.lease = *cfg.Lease
	} else {
		s.lease, err = s.svc.acquire(actx, cfg.Cluster, "", sent)
	}
	if err == nil && cfg.CheckLayout != nil {
		if err = cfg.CheckLayout(actx, s.lease.Cluster); err != nil {
			s.releaseGranted(ctx, s.lease.LastTimestampMS)
			err = fmt.Errorf("worker ID %d granted, then given back: %w", s.lease.WorkerID, err)
		}
	}
	cancel()
	if err != nil {
		return nil, err
	}
	if s.lease.NoHistory {
		// The forgotten holder's last renewal was sent before this grant
		// was asked for, so its deadline (TTL - Margin after that, by a
		// clock running at about ours) is past by then; ClockSkew puts
		// our timestamps above the last ones it used.
		s.opens = s.since(sent) + ttl + cfg.ClockSkew
		cfg.Logger.Warn("worker ID has no history in the lease store (never leased, or the store forgot it): "+
			"no ID is issued under it until any holder of a forgotten lease has fenced itself",
			"cluster", s.lease.Cluster, "worker_id", s.lease.WorkerID, "wait", ttl+cfg.ClockSkew)
	}
	// The first renewal is sent at once: no ID may be issued before a
	// reservation is stored. Until it succeeds the grant bounds the lease:
	// the deadline below only ends its retries (for a wrapped grant the
	// store may expire it sooner, and then refuses the renewal).
	deadline := s.since(sent) + ttl - cfg.Margin
	for {
		f, err := s.renew(ctx, deadline)
		switch {
		case err == nil:
			s.state.Store(f)
			var kctx context.Context
			kctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
			go s.keep(kctx, f)
			return s, nil
		case ctx.Err() != nil:
			s.releaseGranted(ctx, s.lease.LastTimestampMS)
			return nil, ctx.Err()
		case errLeaseGone(err) || s.since(cfg.Now()) >= deadline:
			s.releaseGranted(ctx, s.lease.LastTimestampMS)
			return nil, fmt.Errorf("%w: first renewal of worker ID %d: %w", ErrLeaseLost, s.lease.WorkerID, err)
		}
		if !sleep(ctx, min(s.jitter(cfg.RetryInterval), deadline-s.since(cfg.Now()))) {
			s.releaseGranted(ctx, s.lease.LastTimestampMS)
			return nil, ctx.Err()
		}
	}
}

// Lease returns the lease as granted: its LastTimestampMS is the previous
// holders' reservation, the floor of every ID under this session.
func (s *Session) Lease() Lease { return s.lease }

// Renewed returns the lease as of its last renewal (its ExpiresAt by the
// store's clock, its LastTimestampMS this holder's own reservation), and
// whether the session still holds it.
func (s *Session) Renewed() (Lease, bool) {
	f := s.state.Load()
	if f == nil || s.since(s.cfg.Now()) >= f.deadline {
		return Lease{}, false
	}
	return f.lease, true
}

// Fence reports whether an ID timestamped unixMS may be issued at now (read
// from the session's clock): the session has not ended, the wait of a grant
// with no history is over, now is before the local deadline, and unixMS is
// within the reservation. It takes no lock and does not allocate.
func (s *Session) Fence(now time.Time, unixMS int64) bool {
	f := s.state.Load()
	at := now.Sub(s.base)
	return f != nil && at >= s.opens && f.allows(at, unixMS)
}

// Opens returns how long from now until Fence first lets an ID through: the
// rest of the wait of a grant with no history, or 0.
func (s *Session) Opens(now time.Time) time.Duration {
	return max(s.opens-now.Sub(s.base), 0)
}

// SecondsLeft returns how long the lease may still be used if no renewal
// succeeds (its local deadline minus now), or 0 once it cannot.
func (s *Session) SecondsLeft(now time.Time) float64 {
	f := s.state.Load()
	if f == nil {
		return 0
	}
	return max(f.deadline-now.Sub(s.base), 0).Seconds()
}

// Done returns a channel closed once, when the session ends: the local
// deadline passed without a renewal, the store refused one, or Close,
// Abandon or GiveUp. Fence is false from then on.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns why the session ended (ErrLeaseLost or ErrSessionClosed,
// wrapped with the cause), or nil while it lasts.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// GiveUp ends the session at once and has its goroutine release the lease,
// recording the reservation. It is for a generator that cannot go on under
// this worker ID (its clock fell too far behind the ID's reservations);
// another ID may serve. It never blocks.
func (s *Session) GiveUp() {
	s.end(fmt.Errorf("%w: given up", ErrSessionClosed))
	s.gave.Do(func() { close(s.giveUp) })
}

// Abandon ends the session and stops its goroutine without a word to the
// store, for when the store is known to be gone: the lease expires by its
// TTL. Close after Abandon releases nothing.
func (s *Session) Abandon() {
	s.end(fmt.Errorf("%w: abandoned", ErrSessionClosed))
	s.cancel()
	<-s.exited
	s.mu.Lock()
	s.held = false
	s.mu.Unlock()
}

// halt ends the session and stops its goroutine, leaving a lease still held
// for Close to release: the Keeper's context ended.
func (s *Session) halt(why error) {
	s.end(fmt.Errorf("%w: %w", ErrSessionClosed, why))
	s.cancel()
	<-s.exited
}

// Close ends the session, stops its goroutine, and releases the lease if it
// still held it, reporting lastTimestampMS (the highest timestamp used) as
// its last_timestamp_ms. When the store cannot be reached it returns the
// error; the lease then expires by its TTL. Later calls return the first
// call's result.
func (s *Session) Close(ctx context.Context, lastTimestampMS int64) error {
	s.closeOnce.Do(func() {
		s.end(fmt.Errorf("%w: closed", ErrSessionClosed))
		s.cancel()
		<-s.exited
		s.mu.Lock()
		held := s.held
		s.held = false
		s.mu.Unlock()
		if held {
			l := s.lease
			s.closeErr = s.svc.Release(ctx, l.Cluster, l.WorkerID, l.Token, lastTimestampMS)
		}
	})
	return s.closeErr
}

// end unpublishes the fence and closes Done, once.
func (s *Session) end(why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended, s.err = true, why
	s.state.Store(nil)
	close(s.done)
}

// publish installs a renewal's fence unless the session ended meanwhile.
func (s *Session) publish(f *fence) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.state.Store(f)
	return true
}

// releaseGranted gives back a lease NewSession could not complete, so its
// worker ID need not wait for the TTL; best effort, as the TTL ends it
// anyway.
func (s *Session) releaseGranted(ctx context.Context, lastTimestampMS int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.svc.TTL()/3)
	defer cancel()
	l := s.lease
	if err := s.svc.Release(ctx, l.Cluster, l.WorkerID, l.Token, lastTimestampMS); err != nil {
		s.cfg.Logger.Warn("release of a worker lease not taken up failed; it will expire", "err", err,
			"cluster", l.Cluster, "worker_id", l.WorkerID)
	}
}

func (s *Session) since(t time.Time) time.Duration { return t.Sub(s.base) }

// jitter returns a wait of d/2 plus a random part of up to d/2 ("equal
// jitter"). After a store outage every holder's renewals failed at about
// the same moment; without it they would all retry in lockstep, each retry
// a burst on the store just back. No wait is longer than d, so a renewal is
// retried at least as often as RetryInterval says.
func (s *Session) jitter(d time.Duration) time.Duration { return d/2 + s.cfg.randN(d/2+1) }
