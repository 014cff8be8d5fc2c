package workerlease

import (
	"strconv"
	"time"

	"github.com/idalloc/idalloc/errs"
)

// Why a Keeper holds no lease whose fence is open (Wait.Reason), in the
// words front ends show: /health's body, the refusal of an ID.
const (
	// WaitAcquiring: no lease yet (the keeper not started, or its attempt
	// under way), or the last one ended and the next is being acquired.
	WaitAcquiring = "taking a worker lease"
	// WaitRetrying: the last attempt failed (the store unreachable, or the
	// layout not confirmed); the next is due.
	WaitRetrying = "the last attempt to take a worker lease failed; retrying"
	// WaitNoFree: the last attempt found every worker ID of the cluster held.
	WaitNoFree = "no worker ID is free in the cluster; retrying"
	// WaitNoHistory: a grant with no history waits out any holder of a
	// lease the store may have forgotten (Lease.NoHistory).
	WaitNoHistory = "waiting for any holder of a lease the store may have forgotten"
	// WaitRenewing: the lease's local deadline passed without a renewal;
	// the session retries until the store answers or refuses.
	WaitRenewing = "the worker lease's renewal is overdue; retrying"
)

// Wait says why a Keeper holds no lease whose fence is open, and about how
// long until it may; the zero Wait while it holds one.
type Wait struct {
	// Reason is one of the Wait* words, "" when the fence is open.
	Reason string
	// For is an estimate of the wait, > 0 while Reason is set: the rest of
	// a grant's wait with no history, the time to the next attempt, or the
	// retry interval while an attempt is under way.
	For time.Duration
}

// ErrWaiting is what a WaitError is a case of: no lease whose fence is
// open yet; retrying may succeed, here or on another instance.
var ErrWaiting = errs.E(errs.Unavailable, "", "worker lease not ready: retry", nil)

// Err is the refusal of an ID during w: ErrNoWorkerID when every worker ID
// was found held (the cluster is full, not starting), a *WaitError
// otherwise, nil when w is the zero Wait.
func (w Wait) Err() error {
	switch {
	case w.Reason == "":
		return nil
	case w.Reason == WaitNoFree:
		return ErrNoWorkerID
	}
	secs := strconv.FormatFloat(max(w.For, time.Millisecond).Seconds(), 'f', 1, 64)
	return &WaitError{Wait: w, err: errs.E(errs.Unavailable, "",
		"worker lease not ready: "+w.Reason+"; retry in about "+secs+" s", ErrWaiting)}
}

// WaitError is ErrWaiting for one Wait: its words say why and about how
// long, for protocols without a Retry-After (RESP), and RetryAfterSeconds
// is HTTP's Retry-After. errs.KindOf is Unavailable.
type WaitError struct {
	Wait Wait
	err  *errs.Error
}

func (e *WaitError) Error() string { return e.err.Error() }

// Unwrap returns the per-call *errs.Error, a case of ErrWaiting.
func (e *WaitError) Unwrap() error { return e.err }

// RetryAfterSeconds is the wait rounded up to whole seconds, at least 1.
func (e *WaitError) RetryAfterSeconds() int64 {
	return max(1, int64((e.Wait.For+time.Second-1)/time.Second))
}
