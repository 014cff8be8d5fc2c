// Package workerlease provides worker-ID leases for snowflake generators: a
// lease is granted with a random token and a TTL judged by the store's
// clock, renewed and released by compare-and-set on the token, and fenced:
// once its holder can no longer prove it still holds the lease, it must stop
// issuing IDs. It imports nothing of this module, so a library user takes
// leases from a store of their own (MemoryStore here; SQL, Redis and etcd
// stores in packages of their own) without the server.
//
// Service validates and serves the lease calls of the HTTP API. Session is
// one lease kept alive, shaped like etcd's concurrency.Session: Done closes
// once when the lease can no longer be proven held, Fence is the check
// before each ID, Close releases it with the last timestamp used. Keeper is
// a small supervisor that starts the next Session after a loss. The
// guarantee they build: no ID is issued while the lease may have lapsed,
// and a later holder of the same worker ID issues only IDs above its
// predecessor's, even when its clock is behind. Package leasetest is the
// conformance suite every Store passes.
//
// Errors carry their meaning: every refusal is an *errs.Error with a Kind
// of idalloc's vocabulary (bad_request, no_worker_id, token_mismatch,
// lease_expired, not_assigned, unavailable), the field at fault, and the
// message a user reads, which names the input and what a valid one is
// ("invalid worker_id: must be from 0 to 1023"). Service checks every
// input, once; front ends parse their wire format, call the Service, and
// answer an error with errs.Describe: the Kind picks their own code or
// class from one small table, the message goes out unchanged. The sentinels match with
// errors.Is.
package workerlease

import (
	"errors"

	"github.com/idalloc/idalloc/errs"
)

// Every refusal of this package is an *errs.Error: a Kind from idalloc's
// one vocabulary, the field at fault, and the words a user reads, which
// every front end sends unchanged (package errs).

func invalid(field, reason string, sentinel error) *errs.Error {
	return errs.E(errs.BadRequest, field, reason, sentinel)
}

// Sentinel errors; match them with errors.Is. Those that are *errs.Error carry
// the words every front end answers with.
var (
	ErrNoWorkerID = errs.E(errs.NoWorkerID, "", "no worker ID available in the cluster", nil)
	// ErrInvalidWorkerID: a worker ID outside [0, MaxWorkerID]. The
	// Service's own error names the range: "must be from 0 to 1023".
	ErrInvalidWorkerID  = invalid("worker_id", "out of range", nil)
	ErrInvalidToken     = invalid("token", "want 22 base64url characters", nil)
	ErrInvalidCluster   = invalid("cluster", "want 1 to 64 characters of A-Z a-z 0-9 _ . : -", nil)
	ErrInvalidTimestamp = invalid("last_timestamp_ms", "must be Unix milliseconds, from 0 to a day past this server's clock", nil)
	ErrTokenMismatch    = errs.E(errs.TokenMismatch, "token", "worker ID is held by another token", nil)
	ErrLeaseExpired     = errs.E(errs.LeaseExpired, "token", "lease expired: acquire a new worker ID", nil)
	ErrNotAssigned      = errs.E(errs.NotAssigned, "worker_id", "worker ID is not assigned", nil)
	// ErrUnavailable wraps a store failure that is none of the outcomes
	// above (the database unreachable, a timeout): retrying may succeed.
	ErrUnavailable = errs.E(errs.Unavailable, "", "unavailable: the lease store is unreachable; retry", nil)

	ErrInvalidConfig = errors.New("invalid workerlease config")
)
