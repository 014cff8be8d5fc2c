package workerlease

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/idalloc/idalloc/snowflake"
)

// Source issues snowflake IDs under the Keeper's lease: for each lease the
// Keeper acquires it builds a generator for that worker ID, starting after the
// previous holders' reservation and fenced by that lease alone. It starts no
// goroutines; its generators run on the callers' goroutines and the swap runs
// on the Keeper's. It is safe for concurrent use.
type Source struct {
	k      *Keeper
	base   snowflake.Settings
	layout snowflake.Layout
	cur    atomic.Pointer[leasedGenerator]
}

// leasedGenerator is the generator built for one lease.
type leasedGenerator struct {
	lease  Lease
	gen    *snowflake.Generator
	err    error       // why gen could not be built; gen is nil then
	gaveUp atomic.Bool // GiveUp is asked once per lease, not once per ID
}

// NewSource returns a Source fed by k, whose generators use base with
// WorkerID, StartAfterMS (raised to the lease's LastTimestampMS) and Fence
// set per lease. It installs itself in k's OnLease, ahead of any callback
// already there, so it must be called before k.Start. base.Now must be the
// Keeper's clock, since the fence compares its readings with the lease
// deadline. Errors: ErrInvalidConfig after k.Start; the snowflake errors of
// base, including snowflake.ErrInvalidWorkerID when the layout's worker bits
// cannot hold the Service's MaxWorkerID.
func NewSource(k *Keeper, base snowflake.Settings) (*Source, error) {
	probe := base
	probe.WorkerID = k.svc.MaxWorkerID()
	g, err := snowflake.New(probe)
	if err != nil {
		return nil, fmt.Errorf("snowflake settings for worker IDs up to %d: %w", probe.WorkerID, err)
	}
	s := &Source{k: k, base: base, layout: g.Layout()}

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started {
		return nil, fmt.Errorf("%w: NewSource after Keeper.Start", ErrInvalidConfig)
	}
	next := k.onLease
	k.onLease = func(l Lease) {
		s.install(l)
		if next != nil {
			next(l)
		}
	}
	return s, nil
}

// install builds the generator for a new lease. It runs on the keeper
// goroutine before the lease is published, so the generator is in place
// before the fence can let an ID through.
func (s *Source) install(l Lease) {
	st := s.base
	st.WorkerID = l.WorkerID
	// NewSource's probe held the layout to the 10-year rule at start; a
	// running instance keeps serving until the time bits really run out.
	st.SkipLifetimeCheck = true
	st.StartAfterMS = max(st.StartAfterMS, l.LastTimestampMS)
	// The store's reservation already covers our own IDs; the previous
	// generator is a second witness that costs nothing.
	if prev := s.cur.Load(); prev != nil && prev.gen != nil && prev.lease.WorkerID == l.WorkerID {
		st.StartAfterMS = max(st.StartAfterMS, prev.gen.LastTimestampMS())
	}
	st.Fence = s.k.Fence(l)
	g, err := snowflake.New(st)
	if err != nil {
		s.k.log.Error("build snowflake generator for a new worker lease", "err", err,
			"cluster", l.Cluster, "worker_id", l.WorkerID)
		err = fmt.Errorf("snowflake generator for worker ID %d: %w", l.WorkerID, err)
	}
	s.cur.Store(&leasedGenerator{lease: l, gen: g, err: err})
}

// Next returns a new ID. Errors: ErrNoWorkerID while the keeper finds every
// worker ID held (before the first lease or after losing one);
// snowflake.ErrFenced while no lease is provably held otherwise (none yet,
// lost and not yet replaced, or renewals stalled); snowflake.ErrClockDriftTryLater; and
// snowflake.ErrClockDriftTooLargeToRecover, upon which the lease is given up
// so the Keeper can acquire a worker ID this clock can serve.
func (s *Source) Next() (int64, error) {
	c := s.cur.Load()
	if c == nil {
		return 0, s.noLease()
	}
	if c.gen == nil {
		return 0, c.err
	}
	id, err := c.gen.Next()
	if err != nil {
		return 0, s.failed(c, err)
	}
	return id, nil
}

// NextN fills dst with strictly increasing IDs from one generator. Errors as
// Next; on error dst holds no usable IDs.
func (s *Source) NextN(dst []int64) error {
	c := s.cur.Load()
	if c == nil {
		return s.noLease()
	}
	if c.gen == nil {
		return c.err
	}
	if err := c.gen.NextN(dst); err != nil {
		return s.failed(c, err)
	}
	return nil
}

// noLease is the error before the first lease: the store unreachable or
// the first acquire under way is a retry (fenced), not a full cluster.
func (s *Source) noLease() error {
	if s.k.noFree.Load() {
		return ErrNoWorkerID
	}
	return snowflake.ErrFenced
}

// failed handles a generator error: a drift too large gives the lease up;
// a fenced generator whose keeper finds no free worker ID reports that.
func (s *Source) failed(c *leasedGenerator, err error) error {
	if errors.Is(err, snowflake.ErrClockDriftTooLargeToRecover) && c.gaveUp.CompareAndSwap(false, true) {
		s.k.GiveUp(c.lease)
	}
	if errors.Is(err, snowflake.ErrFenced) && s.k.noFree.Load() {
		return ErrNoWorkerID
	}
	return err
}

// Layout returns the layout of every ID the Source issues.
func (s *Source) Layout() snowflake.Layout { return s.layout }

// LastTimestampMS returns the highest timestamp the current generator issued
// (or its floor), 0 before the first lease: what Keeper.Close reports.
func (s *Source) LastTimestampMS() int64 {
	c := s.cur.Load()
	if c == nil || c.gen == nil {
		return 0
	}
	return c.gen.LastTimestampMS()
}
