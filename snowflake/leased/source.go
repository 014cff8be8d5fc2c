// Package leased issues snowflake IDs under worker-ID leases: it wires the
// pure generator of package snowflake to the sessions of package
// workerlease, which know nothing of each other. For each session it builds
// one generator for that session's worker ID, starting after the previous
// holders' reservation and fenced by that session alone, so an ID is issued
// only while its lease is provably held and never at or below an ID an
// earlier holder of the worker ID may have issued.
//
// Two holders of one cluster with different layouts could compose the same
// ID from different parts, so the layout is this package's to keep one per
// cluster too: every lease store records a cluster's first layout
// (LayoutRecorder), LayoutGate holds an instance's leases back until its
// own is confirmed, and CheckEachLease confirms it again after each grant.
package leased

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Sessions is what a Source needs of the holder of its leases
// (workerlease.Keeper): the newest session, and why it holds no lease
// whose fence is open, when it does not.
type Sessions interface {
	Session() *workerlease.Session
	Wait(now time.Time) workerlease.Wait
}

// Source issues snowflake IDs under the current session of its Sessions. It
// starts no goroutines: a session's generator is built by the first call
// that sees the session, and runs on the callers' goroutines. It is safe for
// concurrent use.
type Source struct {
	sessions Sessions
	base     snowflake.Settings

	mu  sync.Mutex // serialises building generators
	cur atomic.Pointer[leasedGenerator]
}

// leasedGenerator is the generator built for one session.
type leasedGenerator struct {
	session *workerlease.Session
	gen     *snowflake.Generator
	err     error // why gen could not be built; gen is nil then
}

// New returns a Source whose generators use base with layout, and with
// WorkerID, StartAfterMS (raised to each lease's LastTimestampMS) and Fence
// set per session. layout is the deployment's, validated by its owner at
// start (NewLayout, CheckLifetime, and a worker-ID range the layout holds);
// base.Epoch and base.WorkerBits must be zero. base.WorkerID is the first
// worker ID of the instance's region (snowflake.Layout.RegionWorkerIDs),
// 0 without regions: each generator's worker ID is it plus its lease's,
// so regions leasing from stores of their own never share one. base.Now must be the
// sessions' clock, since the fence compares its readings with the lease
// deadline. base.Observer, if set, is told by every session's generator, so
// it sees every ID the Source issues. Errors: snowflake.ErrInvalidLayout
// for the zero layout, and the snowflake errors of base.
func New(sessions Sessions, layout snowflake.Layout, base snowflake.Settings) (*Source, error) {
	if layout == (snowflake.Layout{}) {
		// Settings would take the zero Layout as "none" and use Epoch and
		// WorkerBits: the IDs would not be in the layout Layout reports.
		return nil, fmt.Errorf("snowflake settings: no layout: %w", snowflake.ErrInvalidLayout)
	}
	base.Layout = layout
	if err := base.Check(); err != nil {
		return nil, fmt.Errorf("snowflake settings: %w", err)
	}
	return &Source{sessions: sessions, base: base}, nil
}

// generator returns the generator of the current session, building it the
// first time the session is seen; nil while there is no session.
func (s *Source) generator() *leasedGenerator {
	sess := s.sessions.Session()
	if sess == nil {
		return nil
	}
	if c := s.cur.Load(); c != nil && c.session == sess {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.cur.Load()
	if prev != nil && prev.session == sess {
		return prev
	}
	l := sess.Lease()
	st := s.base
	st.WorkerID = s.base.WorkerID + l.WorkerID
	st.StartAfterMS = max(st.StartAfterMS, l.LastTimestampMS)
	// The store's reservation already covers our own IDs; the previous
	// generator is a second witness that costs nothing.
	if prev != nil && prev.gen != nil && prev.session.Lease().WorkerID == l.WorkerID {
		st.StartAfterMS = max(st.StartAfterMS, prev.gen.LastTimestampMS())
	}
	st.Fence = sess.Fence
	g, err := snowflake.New(st)
	if err != nil {
		err = fmt.Errorf("snowflake generator for worker ID %d: %w", st.WorkerID, err)
	}
	c := &leasedGenerator{session: sess, gen: g, err: err}
	s.cur.Store(c)
	return c
}

// Next returns a new ID. Errors: workerlease.ErrNoWorkerID while the keeper
// finds every worker ID held; snowflake.ErrFenced while no lease is
// provably held otherwise, as a *workerlease.WaitError too (saying why and
// about how long) while the keeper holds no lease whose fence is open
// (none yet, a grant with no history waiting, lost and not yet replaced,
// or renewals stalled); snowflake.ErrClockDriftTryLater; and
// snowflake.ErrClockDriftTooLargeToRecover, upon which the session is given
// up so the keeper can acquire a worker ID this clock can serve.
func (s *Source) Next() (int64, error) {
	c := s.generator()
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
	c := s.generator()
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

// noLease is the error before the first session: the store unreachable or
// the first acquisition under way is a retry (fenced), not a full cluster.
func (s *Source) noLease() error {
	return s.fenced(snowflake.ErrFenced)
}

// failed handles a generator error: a drift too large gives the session
// up; a fenced generator says why the keeper holds no open lease.
func (s *Source) failed(c *leasedGenerator, err error) error {
	if errors.Is(err, snowflake.ErrClockDriftTooLargeToRecover) {
		c.session.GiveUp()
	}
	if errors.Is(err, snowflake.ErrFenced) {
		return s.fenced(err)
	}
	return err
}

// fenced is err, a fenced generator's, in the keeper's words when it holds
// no lease whose fence is open: a full cluster is ErrNoWorkerID, a wait
// (starting, no history, a loss) a *workerlease.WaitError that is still
// ErrFenced. A lease held and open (its reservation passed) is err as it is.
func (s *Source) fenced(err error) error {
	switch werr := s.sessions.Wait(s.now()).Err(); {
	case werr == nil:
		return err
	case errors.Is(werr, workerlease.ErrNoWorkerID):
		return werr
	default:
		return fencedWait{werr}
	}
}

// fencedWait is a *workerlease.WaitError in which errors.Is finds
// snowflake.ErrFenced too: its words and kind are the WaitError's, found
// first.
type fencedWait struct{ error }

func (e fencedWait) Unwrap() []error { return []error{e.error, snowflake.ErrFenced} }

// now reads the sessions' clock (base.Now, New's contract).
func (s *Source) now() time.Time {
	if s.base.Now != nil {
		return s.base.Now()
	}
	return time.Now()
}

// Layout returns the layout of every ID the Source issues.
func (s *Source) Layout() snowflake.Layout { return s.base.Layout }

// WorkerID is the worker ID the IDs of a lease of leased carry: leased
// plus the first worker ID of the Source's region (New's base.WorkerID).
func (s *Source) WorkerID(leased int64) int64 { return s.base.WorkerID + leased }

// LastTimestampMS returns the highest timestamp the current generator issued
// (or its floor), 0 before the first: what Keeper.Close reports.
func (s *Source) LastTimestampMS() int64 {
	c := s.cur.Load()
	if c == nil || c.gen == nil {
		return 0
	}
	return c.gen.LastTimestampMS()
}
