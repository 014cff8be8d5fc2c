package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// KeeperConfig tunes a Keeper. Zero values mean the documented defaults.
type KeeperConfig struct {
	// Generator acquires, renews and releases the lease; required.
	Generator *Generator
	// Margin is subtracted from the lease TTL to get the local deadline, to
	// absorb the drift between this clock's rate and the server's. 0 means
	// TTL/10; it must be below TTL/2 (ErrInvalidConfig, found once the
	// server has said its TTL).
	Margin time.Duration
	// RetryInterval is the wait between failed renewals. 0 means 1s.
	RetryInterval time.Duration
	// ClockSkew is the most this clock may disagree with other holders'.
	// When the server's store had no record of the worker ID (never leased,
	// or forgotten: no_history), the generator issues nothing until the
	// TTL plus ClockSkew has passed, the longest a holder of a forgotten
	// lease may go on. 0 means 1s; negative is ErrInvalidConfig.
	ClockSkew time.Duration
	// Now is the holder's clock, which must carry a monotonic reading; the
	// snowflake generator fenced by the Keeper must use the same clock
	// (Settings sees to it). nil means time.Now.
	Now func() time.Time
	// Logger receives lease events. nil means the Client's logger.
	Logger *slog.Logger
}

// Keeper keeps one worker-ID lease over HTTP for a snowflake generator
// running in this process, in the manner of an etcd session: NewKeeper
// acquires it, the Keeper renews it every TTL/3, and once it is lost, it is
// over (Done closes); make a new Keeper to go on.
//
// It is a workerlease.Session, the server's own kind of lease, running on
// the HTTP API, which this package presents to it as a workerlease.Store;
// so the fencing is the server's own. The local deadline is the monotonic
// time at which the last successful renewal was sent, plus the TTL minus
// Margin; the server counts the TTL from when it received that renewal, by
// its database's clock, so the deadline passes before the lease can lapse.
// Each renewal also reserves timestamps: it stores R = Unix ms at sending +
// TTL as the worker ID's last_timestamp_ms, and the fence refuses IDs
// timestamped after R, so the next holder, which starts after R, never
// issues an ID at or below this holder's, whatever its clock says.
//
// Goroutines: the session's one; Close waits for it. Closing the Client
// closes its Keepers.
type Keeper struct {
	c       *Client // for Close to untrack
	session *workerlease.Session
	store   *leaseStore
	grant   workerlease.Lease
	now     func() time.Time
	ownNow  bool // Config.Now was set: Settings passes it to the generator
	fence   func(time.Time, int64) bool
	closing atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// NewKeeper acquires a worker ID through cfg.Generator, waits until its
// first renewal has stored a timestamp reservation (before which no ID may
// be issued), and keeps it. Errors: ErrInvalidConfig (nil Generator, a
// negative RetryInterval or ClockSkew, a Margin out of range); the
// Generator's errors
// (ErrNoAvailableID, ErrUnavailable, ...); the first renewal's error,
// wrapped in ErrLeaseLost; ctx's.
func NewKeeper(ctx context.Context, cfg KeeperConfig) (*Keeper, error) {
	switch {
	case cfg.Generator == nil:
		return nil, fmt.Errorf("%w: KeeperConfig.Generator is nil", ErrInvalidConfig)
	case cfg.RetryInterval < 0:
		return nil, fmt.Errorf("%w: KeeperConfig.RetryInterval %v is negative", ErrInvalidConfig, cfg.RetryInterval)
	case cfg.Margin < 0:
		return nil, fmt.Errorf("%w: KeeperConfig.Margin %v is negative", ErrInvalidConfig, cfg.Margin)
	case cfg.ClockSkew < 0:
		return nil, fmt.Errorf("%w: KeeperConfig.ClockSkew %v is negative", ErrInvalidConfig, cfg.ClockSkew)
	case cfg.ClockSkew == 0:
		cfg.ClockSkew = time.Second // the server's default snowflake.max_drift_error
	}
	c := cfg.Generator.c
	k := &Keeper{now: cfg.Now, ownNow: cfg.Now != nil}
	if k.now == nil {
		k.now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = c.log
	}
	grant, ttl, err := cfg.Generator.acquire(ctx)
	if err != nil {
		return nil, err
	}
	k.grant = grant
	k.store = &leaseStore{g: cfg.Generator, ttl: ttl}
	fail := func(err error) (*Keeper, error) {
		rctx, cancel := context.WithTimeout(context.Background(), c.reqTimeout)
		defer cancel()
		_ = cfg.Generator.release(rctx, grant.Cluster, grant.WorkerID, grant.Token, 0)
		return nil, err
	}
	if cfg.Margin >= ttl/2 {
		return fail(fmt.Errorf("%w: KeeperConfig.Margin %v is not below half the server's lease TTL %v", ErrInvalidConfig, cfg.Margin, ttl))
	}
	svc, err := workerlease.NewService(k.store, workerlease.Config{
		Cluster: grant.Cluster, MaxWorkerID: grant.WorkerID, TTL: ttl, Now: k.now,
	})
	if err != nil {
		return fail(err)
	}
	// The session keeps the grant made over HTTP (it acquires nothing) and
	// owns it once it has accepted its config: it releases the grant itself
	// when its first renewal fails.
	k.session, err = workerlease.NewSession(ctx, workerlease.SessionConfig{
		Service: svc, Lease: &grant, Now: k.now, Margin: cfg.Margin,
		RetryInterval: cfg.RetryInterval, Logger: cfg.Logger, ClockSkew: cfg.ClockSkew,
	})
	switch {
	case errors.Is(err, workerlease.ErrInvalidConfig):
		// The server granted a lease its own Service would not renew.
		return fail(fmt.Errorf("worker ID %d: the server's grant cannot be kept: %w", grant.WorkerID, err))
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("worker ID %d: %w", grant.WorkerID, k.store.lostErr())
	}
	k.fence = k.session.Fence
	k.c = c
	if !c.track(k) {
		_ = k.Close(ctx, 0)
		return nil, ErrClosed
	}
	return k, nil
}

// WorkerID returns the leased worker ID.
func (k *Keeper) WorkerID() int64 { return k.grant.WorkerID }

// StartAfterMS returns the highest timestamp (Unix ms) the earlier holders
// of the worker ID reserved: a generator on it must issue only IDs
// timestamped after it (snowflake.Settings.StartAfterMS).
func (k *Keeper) StartAfterMS() int64 { return k.grant.LastTimestampMS }

// Lease returns the lease as of its last successful renewal: ExpiresAt is
// the server's, by its database clock, and LastTimestampMS this holder's own
// latest reservation.
func (k *Keeper) Lease() workerlease.Lease {
	if l := k.store.last.Load(); l != nil {
		return *l
	}
	return k.grant
}

// Fence returns the check a generator on this lease passes before every
// ID: true while the lease is provably held at now (before the local
// deadline) and unixMS is within the last reservation. It is false for good
// once the lease is lost or the Keeper closed. It takes no lock and does not
// allocate: use it as snowflake.Settings.Fence.
func (k *Keeper) Fence() func(now time.Time, unixMS int64) bool { return k.fence }

// Settings returns base with what a generator on this lease needs:
// WorkerID, StartAfterMS raised to the earlier holders' reservation, Fence,
// and the Keeper's clock as Now when KeeperConfig.Now was set.
func (k *Keeper) Settings(base snowflake.Settings) snowflake.Settings {
	base.WorkerID = k.grant.WorkerID
	base.StartAfterMS = max(base.StartAfterMS, k.grant.LastTimestampMS)
	base.Fence = k.fence
	if k.ownNow {
		base.Now = k.now
	}
	return base
}

// Done returns a channel closed once the lease may no longer be used: its
// local deadline passed with no renewal (closed at that deadline, before the
// lease can lapse on the server), the server refused a renewal, or Close.
// The fence is already false by then.
func (k *Keeper) Done() <-chan struct{} { return k.session.Done() }

// Err returns nil while the lease is kept; after Done, ErrClosed if Close
// ended it, else ErrLeaseLost wrapping the last renewal's error (such as
// ErrTokenExpired, or a timeout when the server did not answer).
func (k *Keeper) Err() error {
	select {
	case <-k.session.Done():
	default:
		return nil
	}
	if k.closing.Load() {
		return ErrClosed
	}
	return k.store.lostErr()
}

// Close stops renewing and releases the lease, reporting lastTimestampMS
// (the highest timestamp the generator used; 0 if unknown, as the last
// reservation covers it) as its last_timestamp_ms. A lease already lost is
// not released. It waits for the session's goroutine and returns the
// release's error; later calls return the first's result.
func (k *Keeper) Close(ctx context.Context, lastTimestampMS int64) error {
	k.closeOnce.Do(func() {
		k.closing.Store(true)
		k.closeErr = k.session.Close(ctx, lastTimestampMS)
		if k.c != nil {
			k.c.untrack(k)
		}
	})
	return k.closeErr
}

// leaseStore presents the HTTP lease API's renew and release to
// workerlease as a Store, for the one lease NewKeeper acquired over HTTP and
// its session wraps (SessionConfig.Lease). Renew asks the server, whose TTL
// is its own: a renewal that reports a shorter TTL than the fence counts on
// is treated as failed.
type leaseStore struct {
	g    *Generator
	ttl  time.Duration
	last atomic.Pointer[workerlease.Lease] // as of the last good renewal
	err  atomic.Pointer[error]             // the last renewal's error
}

var _ workerlease.Store = (*leaseStore)(nil)

// errNeverAcquires answers Acquire: NewKeeper acquires over HTTP itself and
// hands the grant to its session, which then acquires nothing.
var errNeverAcquires = errors.New("the HTTP keeper's lease store never acquires: NewKeeper acquires over HTTP and its session wraps the grant")

// Acquire implements workerlease.Store (workerlease.Service needs one
// whole); it is never called, and refuses.
func (s *leaseStore) Acquire(context.Context, workerlease.AcquireRequest) (workerlease.Lease, error) {
	return workerlease.Lease{}, errNeverAcquires
}

func (s *leaseStore) Renew(ctx context.Context, cluster string, workerID int64, token string, _ time.Duration, lastTimestampMS int64) (workerlease.Lease, error) {
	l, ttl, err := s.g.renew(ctx, cluster, workerID, token, lastTimestampMS)
	if err == nil && ttl < s.ttl {
		err = fmt.Errorf("renewal answered a lease TTL of %v, shorter than the %v this keeper fences by", ttl, s.ttl)
	}
	if err != nil {
		s.err.Store(&err)
		return workerlease.Lease{}, err
	}
	s.err.Store(nil)
	s.last.Store(&l)
	return l, nil
}

func (s *leaseStore) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	return s.g.release(ctx, cluster, workerID, token, lastTimestampMS)
}

// lostErr is ErrLeaseLost with the last renewal's error, if any.
func (s *leaseStore) lostErr() error {
	if p := s.err.Load(); p != nil {
		return fmt.Errorf("%w: %w", ErrLeaseLost, *p)
	}
	return ErrLeaseLost
}
