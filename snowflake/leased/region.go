package leased

import (
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// In one region of several (docs/api.md §13) a worker ID has two names: the
// one the region's lease store grants, 0..⌊2^worker_bits / region.count⌋−1,
// which POST /workerid, renew and release speak (a library user in region
// r adds r·⌊2^worker_bits / region.count⌋ to it), and the one the
// instance's snowflake IDs carry, the lease's plus the region's first
// worker ID (Source.WorkerID), which GET /workerid, /status, the lease
// metrics and /snowflake/{id} show. Without regions the two are one.

// OwnLease is an instance's own lease as its IDs carry it: Keeper's,
// under the worker ID Source's IDs carry.
type OwnLease struct {
	*workerlease.Keeper
	Source *Source
}

// Lease is the keeper's lease under the worker ID the source's IDs carry.
func (o OwnLease) Lease() (workerlease.Lease, bool) {
	l, ok := o.Keeper.Lease()
	l.WorkerID = o.Source.WorkerID(l.WorkerID)
	return l, ok
}

// LayoutLeases is a lease service whose MaxWorkerID, the max_worker_id
// GET /workerid shows beside the instance's worker ID, is the layout's,
// 2^worker_bits − 1, rather than the region's share its store grants.
type LayoutLeases struct {
	*workerlease.Service
	Layout snowflake.Layout
}

// MaxWorkerID is the layout's highest worker ID.
func (l LayoutLeases) MaxWorkerID() int64 { return l.Layout.MaxWorkerID() }

// Region is a region's share of a layout's worker IDs (docs/api.md §13):
// its lease store grants 0..N−1, and its Sources, given First as their
// base WorkerID, add First, so regions leasing from stores of their own
// never share a worker ID.
type Region struct {
	Layout   snowflake.Layout
	First, N int64
}

// NewRegion returns the share of region id of count in layout
// (snowflake.Layout.RegionWorkerIDs, whose errors it returns): the whole
// layout for a count of 1.
func NewRegion(layout snowflake.Layout, count, id int64) (Region, error) {
	first, n, err := layout.RegionWorkerIDs(count, id)
	return Region{Layout: layout, First: first, N: n}, err
}

// Split reports whether the region has less than the layout's worker IDs.
func (r Region) Split() bool { return r.First > 0 || r.N <= r.Layout.MaxWorkerID() }
