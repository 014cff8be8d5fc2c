package workerlease

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// KeeperConfig tunes a Keeper. Zero values mean the documented defaults.
type KeeperConfig struct {
	// Service grants and renews the lease; required.
	Service *Service
	// Now is the holder's clock. It should carry a monotonic reading (as
	// time.Now's does) so that the fence is immune to wall-clock steps; the
	// snowflake generator fenced by this Keeper must use the same clock.
	// nil means time.Now. Waits use package time's timers, which
	// testing/synctest fakes, so tests need no clock of their own for them.
	Now func() time.Time
	// Margin is subtracted from the TTL to get the local deadline, to absorb
	// the drift between this clock's rate and the store's. 0 means TTL/10; it
	// must be below TTL/2 so renewals (every TTL/3) can happen before the
	// deadline.
	Margin time.Duration
	// RetryInterval is the wait between failed renewals and the base of the
	// exponential backoff (capped at the TTL, the longest an ID stays held by
	// a dead holder) between failed acquisitions. 0 means 1s.
	RetryInterval time.Duration
	// Logger receives lease events. nil means no logging.
	Logger *slog.Logger
	// OnLease is called on the keeper goroutine with each newly acquired
	// lease, after its first renewal has stored a timestamp reservation and
	// before the fence (Allow, Fence) can pass an ID under it. Its LastTimestampMS is the
	// previous holders' reservation, which the new generator must start
	// after. Optional.
	OnLease func(Lease)
}

// Keeper keeps this process's own worker-ID lease in the Service's default
// cluster, in the mould of etcd's concurrency.Session: it acquires a lease
// (retrying with backoff while none is free), renews it every TTL/3, and when
// the lease is lost acquires another. Fence(l) is the check every snowflake
// ID of lease l passes (Source uses it; Allow is the same for whichever lease
// is current): true only while the keeper can prove the lease is held.
//
// The local deadline of a lease is the monotonic time at which its last
// successful renewal was sent, plus TTL minus Margin. The store measures the
// TTL from when it received that renewal, by its own clock, so a holder whose
// renewals stall stops issuing before the store can give its worker ID to
// another holder. Each renewal also reserves timestamps: it stores
// R = Unix ms at sending + TTL as the worker ID's last_timestamp_ms, and Allow
// refuses IDs timestamped after R. The next holder starts after R, so it never
// issues an ID at or below this holder's, whatever its clock says.
//
// Start starts the one keeper goroutine; Close stops it, waits for it and
// releases the lease.
type Keeper struct {
	svc     *Service
	now     func() time.Time
	base    time.Time // origin of held.deadline, so Allow compares integers
	margin  time.Duration
	retry   time.Duration
	log     *slog.Logger
	onLease func(Lease)
	// randN returns a random duration in [0, n), for the retries' jitter:
	// rand.N, or a fixed choice in tests (set before Start).
	randN func(n time.Duration) time.Duration

	// state is the published lease; nil while none may be used. It is
	// replaced whole, so Allow sees one consistent snapshot in one load.
	state atomic.Pointer[held]
	// noFree is set while the last acquire found every worker ID held, so a
	// Source with no usable lease can say so (resp_code 5) rather than
	// "not provably held".
	noFree atomic.Bool

	// mu serialises every change of state with GiveUp and Close, so that the
	// keeper goroutine cannot republish a lease they have just revoked.
	mu      sync.Mutex
	lost    chan struct{}
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the keeper goroutine has returned
	// giveUp wakes the keeper goroutine after GiveUp; buffered so GiveUp
	// never blocks, and only a hint: the goroutine checks state itself.
	giveUp chan struct{}

	// final is the lease the keeper goroutine still held when it returned;
	// written before done is closed, read by Close after.
	final *Lease

	closeOnce sync.Once
	closeErr  error
}

// held is one published lease and its fence.
type held struct {
	lease    Lease
	deadline time.Duration // since Keeper.base
	reserve  int64         // Unix ms the holder's IDs must not pass
}

func (h *held) allows(sinceBase time.Duration, unixMS int64) bool {
	return sinceBase < h.deadline && unixMS <= h.reserve
}

// NewKeeper returns a Keeper that is not started. Errors (ErrInvalidConfig):
// a nil Service, a Margin negative or not below TTL/2, a negative
// RetryInterval.
func NewKeeper(cfg KeeperConfig) (*Keeper, error) {
	if cfg.Service == nil {
		return nil, fmt.Errorf("%w: nil Service", ErrInvalidConfig)
	}
	ttl := cfg.Service.TTL()
	switch {
	case cfg.Margin < 0 || cfg.Margin >= ttl/2:
		return nil, fmt.Errorf("%w: Margin %v is outside [0, TTL/2 = %v)", ErrInvalidConfig, cfg.Margin, ttl/2)
	case cfg.Margin == 0:
		cfg.Margin = ttl / 10
	}
	switch {
	case cfg.RetryInterval < 0:
		return nil, fmt.Errorf("%w: RetryInterval %v is negative", ErrInvalidConfig, cfg.RetryInterval)
	case cfg.RetryInterval == 0:
		cfg.RetryInterval = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Keeper{
		svc:     cfg.Service,
		now:     cfg.Now,
		base:    cfg.Now(),
		margin:  cfg.Margin,
		retry:   cfg.RetryInterval,
		log:     cfg.Logger,
		onLease: cfg.OnLease,
		randN:   rand.N[time.Duration],
		lost:    make(chan struct{}),
		giveUp:  make(chan struct{}, 1),
	}, nil
}

// Start starts the keeper goroutine, which runs until ctx ends or Close is
// called. Calls after the first, or after Close, do nothing.
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

// Allow is the fence: it reports whether an ID timestamped unixMS may be
// issued at now (read from the Keeper's clock): a lease is held, now is before
// its local deadline, and unixMS is within its reservation. It takes no lock
// and does not allocate.
func (k *Keeper) Allow(now time.Time, unixMS int64) bool {
	h := k.state.Load()
	return h != nil && h.allows(now.Sub(k.base), unixMS)
}

// Fence returns Allow restricted to lease l: it stays false once l is lost,
// even after the Keeper holds another lease. A generator built for l's worker
// ID must use it rather than Allow, since a call that races with the loss of
// l would otherwise be judged by the next lease, which is for another ID.
func (k *Keeper) Fence(l Lease) func(now time.Time, unixMS int64) bool {
	return func(now time.Time, unixMS int64) bool {
		h := k.state.Load()
		return h != nil && h.lease.Token == l.Token && h.allows(now.Sub(k.base), unixMS)
	}
}

// Lease returns the lease held now, as of its last renewal (so its
// LastTimestampMS is this holder's own reservation), and whether one is held.
func (k *Keeper) Lease() (Lease, bool) {
	h := k.state.Load()
	if h == nil || k.now().Sub(k.base) >= h.deadline {
		return Lease{}, false
	}
	return h.lease, true
}

// SecondsLeft returns how long the held lease may still be used if no renewal
// succeeds (its local deadline minus now), or 0 when none is held.
func (k *Keeper) SecondsLeft(now time.Time) float64 {
	h := k.state.Load()
	if h == nil {
		return 0
	}
	return max(h.deadline-now.Sub(k.base), 0).Seconds()
}

// Lost returns a channel that is closed the next time a lease that OnLease
// announced stops being usable: its deadline passed without a renewal, the
// store refused a renewal, GiveUp, Close, or the end of Start's context. Each
// loss closes the channel and installs a new one, so a watcher calls Lost
// again after each receive; losses between its calls are not queued.
func (k *Keeper) Lost() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

// GiveUp revokes lease l at once if it is still the held lease, and has the
// keeper goroutine release it and, after RetryInterval, acquire another. It
// is for a generator that cannot go on under l (its clock fell too far behind
// the reservations of l's worker ID); another ID, reserved less far ahead,
// may serve. It never blocks.
func (k *Keeper) GiveUp(l Lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if h := k.state.Load(); h == nil || h.lease.Token != l.Token {
		return
	}
	k.revokeLocked()
	select {
	case k.giveUp <- struct{}{}:
	default:
	}
}

// Close revokes the lease, stops the keeper goroutine and waits for it, then
// releases the lease, reporting lastTimestampMS (the highest timestamp used)
// as its last_timestamp_ms. When the store cannot be reached it returns the
// error and abandons the lease, which then expires by TTL. Later calls wait
// for the first and return its result.
func (k *Keeper) Close(ctx context.Context, lastTimestampMS int64) error {
	k.closeOnce.Do(func() {
		k.mu.Lock()
		k.closed = true
		k.revokeLocked()
		cancel, done := k.cancel, k.done
		k.mu.Unlock()
		if cancel == nil {
			return // never started
		}
		cancel()
		<-done
		if l := k.final; l != nil {
			k.closeErr = k.svc.Release(ctx, l.Cluster, l.WorkerID, l.Token, lastTimestampMS)
		}
	})
	return k.closeErr
}

// revokeLocked unpublishes the lease and tells the watchers of Lost.
func (k *Keeper) revokeLocked() {
	if k.state.Swap(nil) == nil {
		return
	}
	close(k.lost)
	k.lost = make(chan struct{})
}

// publish replaces prev by next unless prev was revoked meanwhile (by GiveUp,
// Close or a loss), so a revocation always wins over a renewal in flight.
func (k *Keeper) publish(prev, next *held) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || k.state.Load() != prev {
		return false
	}
	k.state.Store(next)
	return true
}

// revoke unpublishes h if it is still published.
func (k *Keeper) revoke(h *held) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if h != nil && k.state.Load() == h {
		k.revokeLocked()
	}
}
