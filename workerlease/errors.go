// Package workerlease provides worker-ID leases for snowflake generators: a
// lease is granted with a random token and a TTL judged by the database's
// clock, renewed and released by compare-and-set on the token, and kept alive
// by a Keeper that fences its holder: once the holder can no longer prove it
// still holds the lease, it must stop issuing IDs.
//
// Service validates and serves the lease calls of the HTTP API; Keeper keeps
// this process's own lease; Source issues snowflake IDs under it. The
// guarantee they build together: no ID is issued while the lease may have
// lapsed, and a later holder of the same worker ID issues only IDs above its
// predecessor's, even when its clock is behind. MemoryStore is a Store for
// tests and single-process use.
package workerlease

import "errors"

// Sentinel errors; match them with errors.Is.
var (
	ErrNoWorkerID      = errors.New("no worker ID available")
	ErrInvalidWorkerID = errors.New("invalid worker ID")
	ErrInvalidToken    = errors.New("invalid token: want 22 base64url characters")
	ErrTokenMismatch   = errors.New("worker ID is held by another token")
	ErrLeaseExpired    = errors.New("lease expired")
	ErrNotAssigned     = errors.New("worker ID is not assigned")
	// ErrUnavailable wraps a store failure that is none of the outcomes
	// above (the database unreachable, a timeout): retrying may succeed.
	ErrUnavailable = errors.New("worker lease store unavailable")
	// ErrLayoutMismatch: the cluster's recorded snowflake layout (epoch,
	// worker bits) differs from this instance's.
	ErrLayoutMismatch = errors.New("snowflake layout differs from the cluster's")

	ErrInvalidCluster   = errors.New("invalid cluster: want 1 to 64 characters of A-Z a-z 0-9 _ . : -")
	ErrInvalidTimestamp = errors.New("invalid last_timestamp_ms: want Unix milliseconds, 0 to a day past now")
	ErrInvalidConfig    = errors.New("invalid workerlease config")
)
