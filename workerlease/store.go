package workerlease

import (
	"context"
	"time"
)

// Store persists leases in the worker_leases table. Expiry is judged by the
// store's own clock (the database's NOW), never the caller's.
//
// A Store is called by a Service (and the Sessions and Keepers on it), which
// has checked every input once, so a Store trusts its input and checks none
// of it: cluster is ValidCluster, token is ValidToken (Acquire's a new
// random one), workerID is in [0, MaxWorkerID] of the Service, MaxWorkerID
// is at least 0, ttl is at least 1ms, timestamps are from 0 to a day past
// the Service's clock, and Holder is at most MaxHolderLen characters. Its
// columns, keys or values hold these widths whole (leasetest checks it).
// Whatever the store's own engine needs beyond them (a Redis hash tag) is
// the store's to refuse.
type Store interface {
	// Acquire grants a worker ID in [0, maxWorkerID] of cluster that is free:
	// never held, released, or expired by the store's clock. It prefers IDs
	// whose last_timestamp_ms is at or below nowMS (the caller's clock), then the
	// lowest ID. The returned Lease carries the row's LastTimestampMS (0 when
	// new). ErrNoWorkerID when every ID is held by a live lease. Two concurrent
	// callers never get the same ID. The Lease's NoHistory says the store had
	// no record of the ID: a Renew or Release must never create one, so a
	// store that forgot a lease makes its holder stop at its next renewal.
	Acquire(ctx context.Context, req AcquireRequest) (Lease, error)

	// Renew extends the lease held by token to now+ttl (store's clock), and
	// raises last_timestamp_ms to lastTimestampMS if that is larger (it never
	// decreases). Errors: ErrNotAssigned (no such row, or released),
	// ErrTokenMismatch (held by another token), ErrLeaseExpired (this token's
	// lease expired; renewing it is refused even if no one took it over).
	Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (Lease, error)

	// Release frees the lease only if token still holds it (compare-and-set):
	// it can never free an ID someone else now holds. lastTimestampMS is raised as
	// in Renew. Errors as Renew.
	Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error
}

// AcquireRequest is the input of Store.Acquire.
type AcquireRequest struct {
	Cluster     string
	MaxWorkerID int64
	Token       string
	Holder      string // free text: host name, pid; for operators
	TTL         time.Duration
	NowMS       int64
}

// Lease is one holding of a worker ID.
type Lease struct {
	Cluster         string
	WorkerID        int64
	Token           string
	Holder          string
	ExpiresAt       time.Time // by the store's clock, UTC
	LastTimestampMS int64     // highest timestamp any holder of this ID has reserved

	// NoHistory is set by Acquire when the store held no record of the
	// worker ID before this grant (nor so of its last timestamp): the ID was
	// never leased, or the store forgot it (Redis restarted without
	// persistence, FLUSHALL, etcd rebuilt, rows deleted). The store cannot
	// tell the two apart, and an earlier holder of a forgotten lease may
	// still be issuing IDs under it until its next renewal is refused or
	// its deadline passes: a Session waits that out before its fence opens.
	NoHistory bool
}

// The widths of the SQL store's columns, which every Store holds whole, so
// that a deployment can move its leases from one store to another. The
// Service never passes a Store more: a cluster is ValidCluster (at most
// MaxClusterLen characters), a token ValidToken (shorter than MaxTokenLen),
// and a holder is cut to MaxHolderLen characters.
const (
	MaxClusterLen = 64  // characters of a cluster name
	MaxTokenLen   = 32  // characters of a token
	MaxHolderLen  = 255 // characters of a holder; the Service cuts longer ones
)

// cutHolder shortens a holder to MaxHolderLen characters: it is free text
// for operators, not worth refusing a lease over.
func cutHolder(s string) string {
	n := MaxHolderLen
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
