package workerlease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// KeeperConfig tunes a Keeper: the SessionConfig of each session it starts
// (Cluster "" means the Service's default). RetryInterval is also the base
// of the exponential backoff between failed acquisitions, capped at the TTL
// (the longest a dead holder keeps an ID).
type KeeperConfig = SessionConfig

// Keeper is a small supervisor that keeps this process holding one worker
// ID: it starts a Session, and when that session ends (lost, or given up by
// its generator) it starts the next one, retrying with backoff while none is
// free or the store is down. Whoever issues IDs reads Session for the
// current one and fences each ID with that session alone.
//
// Start starts its one goroutine; Close stops it and closes the current
// session, releasing its lease.
type Keeper struct {
	cfg SessionConfig

	cur    atomic.Pointer[Session] // the newest session; nil before the first
	noFree atomic.Bool             // the last acquisition found every ID held
	failed atomic.Bool             // the last acquisition failed
	// base is the origin of retryAt: when the next acquisition is due
	// while the keeper waits between attempts (stale otherwise), for Wait.
	base    time.Time
	retryAt atomic.Int64

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the goroutine has returned

	closeOnce sync.Once
	closeErr  error
}

// NewKeeper returns a Keeper that is not started. Errors (ErrInvalidConfig)
// as NewSession's, and a Lease: a Keeper acquires each of its leases, as it
// starts a session after every loss.
func NewKeeper(cfg KeeperConfig) (*Keeper, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if cfg.Lease != nil {
		return nil, fmt.Errorf("%w: a Keeper acquires its own leases; Lease is for NewSession", ErrInvalidConfig)
	}
	return &Keeper{cfg: cfg, base: cfg.Now()}, nil
}

// Start starts the keeper goroutine, which runs until ctx ends or Close is
// called. When ctx ends, the current session stops renewing and ends (its
// fence closes); its lease stays for Close to release, or expires by its
// TTL. Calls after the first, or after Close, do nothing.
func (k *Keeper) Start(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started || k.closed {
		return
	}
	k.started = true
	ctx, k.cancel = context.WithCancel(ctx)
	k.done = make(chan struct{})
	go k.run(ctx)
}

// Session returns the newest session, which may have ended (its Fence then
// refuses everything), or nil before the first one. It does not allocate.
func (k *Keeper) Session() *Session { return k.cur.Load() }

// NoFreeWorkerID reports whether the last acquisition found every worker ID
// of the cluster held, so that a generator without a usable lease can say
// so rather than "not provably held".
func (k *Keeper) NoFreeWorkerID() bool { return k.noFree.Load() }

// Lease returns the current session's lease as of its last renewal, and
// whether one is held.
func (k *Keeper) Lease() (Lease, bool) {
	if s := k.cur.Load(); s != nil {
		return s.Renewed()
	}
	return Lease{}, false
}

// SecondsLeft returns how long the current lease may still be used if no
// renewal succeeds, or 0 when none is held.
func (k *Keeper) SecondsLeft(now time.Time) float64 {
	if s := k.cur.Load(); s != nil {
		return s.SecondsLeft(now)
	}
	return 0
}

// Wait says why the keeper holds no lease whose fence is open at now, and
// about how long until it may (docs/api.md §2, Health): from before its first
// grant (started or not) until that grant's fence opens, after a loss
// until the next one's does, and while a renewal is overdue; the zero Wait
// while the current lease may issue IDs. It takes no lock.
func (k *Keeper) Wait(now time.Time) Wait {
	if s := k.cur.Load(); s != nil {
		if f := s.state.Load(); f != nil { // the session has not ended
			at := now.Sub(s.base)
			switch {
			case at < s.opens:
				return Wait{Reason: WaitNoHistory, For: s.opens - at}
			case at < f.deadline:
				return Wait{}
			}
			return Wait{Reason: WaitRenewing, For: k.cfg.RetryInterval}
		}
	}
	w := Wait{Reason: WaitAcquiring, For: k.cfg.RetryInterval}
	switch {
	case k.noFree.Load():
		w.Reason = WaitNoFree
	case k.failed.Load():
		w.Reason = WaitRetrying
	}
	if d := time.Duration(k.retryAt.Load()) - now.Sub(k.base); d > 0 {
		w.For = d
	}
	return w
}

// pause waits d before the next acquisition unless ctx ends first, and
// tells Wait when that is due; it reports whether d elapsed.
func (k *Keeper) pause(ctx context.Context, d time.Duration) bool {
	k.retryAt.Store(int64(k.cfg.Now().Sub(k.base) + d))
	return sleep(ctx, d)
}

// run starts sessions, one after another, until ctx ends.
func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	ttl := k.cfg.Service.TTL()
	backoff := k.cfg.RetryInterval
	for {
		s, err := NewSession(ctx, k.cfg)
		k.noFree.Store(errors.Is(err, ErrNoWorkerID))
		k.failed.Store(err != nil)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := backoff/2 + k.cfg.randN(backoff/2+1) // equal jitter, as a session's retries
			// A refusal by CheckLayout is logged by its owner, who knows
			// what it means; here it is one more failure to retry.
			k.cfg.Logger.Warn("acquire worker lease failed; retrying", "err", err, "retry_in", wait)
			if !k.pause(ctx, wait) {
				return
			}
			backoff = min(2*backoff, max(ttl, k.cfg.RetryInterval))
			continue
		}
		backoff = k.cfg.RetryInterval
		l := s.Lease()
		k.cfg.Logger.Info("worker lease acquired", "cluster", l.Cluster, "worker_id", l.WorkerID,
			"last_timestamp_ms", l.LastTimestampMS, "no_history", l.NoHistory)
		k.cur.Store(s)
		select {
		case <-ctx.Done():
			// Nobody keeps the lease once the keeper stops: the session
			// stops renewing (its fence closes), and Close releases it.
			s.halt(errors.New("keeper stopped"))
			return
		case <-s.Done():
		}
		if errors.Is(s.Err(), ErrSessionClosed) {
			// Given up by its generator, which will likely give up the
			// next lease too if it comes at once: pacing bounds the load
			// on the store.
			if !k.pause(ctx, k.cfg.RetryInterval) {
				return
			}
		}
	}
}

// Close stops the keeper goroutine and waits for it, then closes the
// current session: its lease is released with lastTimestampMS (the highest
// timestamp used) as its last_timestamp_ms. When the store cannot be reached
// it returns the error; the lease then expires by its TTL. Later calls
// return the first call's result.
func (k *Keeper) Close(ctx context.Context, lastTimestampMS int64) error {
	k.closeOnce.Do(func() {
		k.mu.Lock()
		k.closed = true
		cancel, done := k.cancel, k.done
		k.mu.Unlock()
		if cancel == nil {
			return // never started
		}
		cancel()
		<-done
		if s := k.cur.Load(); s != nil {
			k.closeErr = s.Close(ctx, lastTimestampMS)
		}
	})
	return k.closeErr
}
