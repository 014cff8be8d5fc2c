package main

import (
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/workerlease"
)

// In one region of several (docs/api.md §13) a worker ID has two names: the
// one the region's lease store grants, 0..⌊2^worker_bits / region.count⌋−1,
// which POST /workerid, renew and release speak (a library user in region
// r adds r·⌊2^worker_bits / region.count⌋ to it), and the one this
// instance's snowflake IDs carry, the lease's plus the region's first
// worker ID, which GET /workerid, /status, the lease metrics and
// /snowflake/{id} show. Without regions the two are one.

// ownLease is this instance's lease as the server shows it: under the
// worker ID its IDs carry.
type ownLease struct {
	*workerlease.Keeper
	source *leased.Source
}

// Lease is the keeper's lease under the worker ID the source's IDs carry.
func (o ownLease) Lease() (workerlease.Lease, bool) {
	l, ok := o.Keeper.Lease()
	l.WorkerID = o.source.WorkerID(l.WorkerID)
	return l, ok
}

// layoutLeases is the lease service whose MaxWorkerID, the max_worker_id
// GET /workerid shows beside the instance's worker ID, is the layout's,
// 2^worker_bits − 1, rather than the region's share its store grants.
type layoutLeases struct {
	*workerlease.Service
	layout snowflake.Layout
}

// MaxWorkerID is the layout's highest worker ID.
func (l layoutLeases) MaxWorkerID() int64 { return l.layout.MaxWorkerID() }
