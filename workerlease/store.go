package workerlease

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

// Store persists leases in the worker_leases table. Expiry is judged by the
// store's own clock (the database's NOW), never the caller's.
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

	// CheckLayout records the snowflake layout of cluster (its epoch in Unix
	// milliseconds and its worker bits) on first use and refuses a different
	// one afterwards with ErrLayoutMismatch: holders of one cluster with
	// different layouts could compose the same ID from different parts, and a
	// later epoch repeats earlier IDs. The record never changes once made.
	CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error
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

// The widths of the SQL store's columns, which every Store keeps to, so that
// a deployment can move its leases from one store to another.
const (
	MaxClusterLen = 64  // characters of a cluster name
	MaxTokenLen   = 32  // characters of a token
	MaxHolderLen  = 255 // characters of a holder; longer ones are cut
)

// CheckArgs is the input check every Store makes before it touches its data,
// so that all refuse the same things in the same words: ErrInvalidToken for
// an empty token (it marks a released ID in several stores, and would match
// one) or one over MaxTokenLen; ErrInvalidCluster for an empty cluster or
// one over MaxClusterLen; ErrInvalidConfig for a TTL below 1ms (Release,
// which takes none, passes time.Millisecond).
func CheckArgs(cluster, token string, ttl time.Duration) error {
	switch {
	case token == "" || utf8.RuneCountInString(token) > MaxTokenLen:
		return ErrInvalidToken
	case cluster == "" || utf8.RuneCountInString(cluster) > MaxClusterLen:
		return ErrInvalidCluster
	case ttl < time.Millisecond:
		return fmt.Errorf("%w: lease TTL %v is below 1ms", ErrInvalidConfig, ttl)
	}
	return nil
}

// Check is CheckArgs for an Acquire, and ErrInvalidWorkerID for a negative
// MaxWorkerID.
func (r AcquireRequest) Check() error {
	if err := CheckArgs(r.Cluster, r.Token, r.TTL); err != nil {
		return err
	}
	if r.MaxWorkerID < 0 {
		return ErrInvalidWorkerID
	}
	return nil
}

// CutHolder shortens a holder to MaxHolderLen characters: it is free text
// for operators, not worth refusing a lease over.
func CutHolder(s string) string {
	n := MaxHolderLen
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
