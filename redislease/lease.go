package redislease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Acquire grants the preferred free worker ID of req.Cluster: among IDs in
// [0, req.MaxWorkerID] that are free (never leased, released, or expired by
// Redis's clock) and whose last_timestamp_ms is at most req.NowMS (a never
// leased ID counts as 0), the lowest; failing that, the lowest free one. The
// scan and the claim are one script, so two callers never get the same ID.
// Its input is the Service's, checked there (workerlease.Store); Redis
// refuses only what would break its hash tag. Errors:
// workerlease.ErrNoWorkerID; workerlease.ErrInvalidCluster for a cluster
// that is empty or holds '{' or '}'; workerlease.ErrInvalidConfig for a
// store opened with a key prefix that holds them. Any other error is a
// fault (Redis unreachable, a timeout).
//
// go-redis resends a command whose reply was lost (MaxRetries); an Acquire
// that ran once already then grants a second ID, and the first stays held,
// unrenewed, until its TTL ends: an ID idle for a TTL, never one granted
// twice.
func (s *Store) Acquire(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
	l, err := s.acquire(ctx, req)
	if err != nil {
		return workerlease.Lease{}, fmt.Errorf("acquire worker ID in cluster %q: %w", req.Cluster, err)
	}
	return l, nil
}

func (s *Store) acquire(ctx context.Context, req workerlease.AcquireRequest) (workerlease.Lease, error) {
	if err := s.checkCluster(req.Cluster); err != nil {
		return workerlease.Lease{}, err
	}
	holder := req.Holder
	reply, err := acquireScript.Run(ctx, s.c, []string{s.leaseKey(req.Cluster)},
		req.MaxWorkerID, req.Token, holder, req.TTL.Milliseconds(), req.NowMS).StringSlice()
	if err != nil {
		return workerlease.Lease{}, err
	}
	if len(reply) == 1 && reply[0] == "none" {
		return workerlease.Lease{}, workerlease.ErrNoWorkerID
	}
	if len(reply) != 5 || reply[0] != "ok" {
		return workerlease.Lease{}, badReply(reply)
	}
	n, err := parseInts(reply[1:4])
	if err != nil {
		return workerlease.Lease{}, err
	}
	return workerlease.Lease{
		Cluster:         req.Cluster,
		WorkerID:        n[0],
		Token:           req.Token,
		Holder:          holder,
		ExpiresAt:       time.UnixMilli(n[1]).UTC(),
		LastTimestampMS: n[2],
		NoHistory:       reply[4] == "1",
	}, nil
}

// Renew extends the lease to Redis's now + ttl and raises last_timestamp_ms
// to lastTimestampMS if that is larger, by compare-and-set on a token whose
// lease has not expired. A renewal refused because the token's own lease
// expired still raises last_timestamp_ms. Errors:
// workerlease.ErrNotAssigned (never leased, or released),
// workerlease.ErrTokenMismatch (held by another token),
// workerlease.ErrLeaseExpired; a cluster refused as Acquire's.
func (s *Store) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (workerlease.Lease, error) {
	l, err := s.renew(ctx, cluster, workerID, token, ttl, lastTimestampMS)
	if err != nil {
		return workerlease.Lease{}, fmt.Errorf("renew worker ID %d in cluster %q: %w", workerID, cluster, err)
	}
	return l, nil
}

func (s *Store) renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (workerlease.Lease, error) {
	if err := s.checkCluster(cluster); err != nil {
		return workerlease.Lease{}, err
	}
	reply, err := s.hold(ctx, cluster, workerID, token, lastTimestampMS, strconv.FormatInt(ttl.Milliseconds(), 10))
	if err != nil {
		return workerlease.Lease{}, err
	}
	if len(reply) != 4 {
		return workerlease.Lease{}, badReply(reply)
	}
	n, err := parseInts(reply[1:3])
	if err != nil {
		return workerlease.Lease{}, err
	}
	return workerlease.Lease{
		Cluster:         cluster,
		WorkerID:        workerID,
		Token:           token,
		Holder:          reply[3],
		ExpiresAt:       time.UnixMilli(n[0]).UTC(),
		LastTimestampMS: n[1],
	}, nil
}

// Release frees the worker ID by compare-and-set on a token whose lease has
// not expired, raising last_timestamp_ms as Renew does, so that the next
// holder starts after it. Errors as Renew.
//
// go-redis resends a command whose reply was lost (MaxRetries); a Release
// that ran once already then reports workerlease.ErrNotAssigned. The worker
// ID is free either way.
func (s *Store) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	err := s.checkCluster(cluster)
	if err == nil {
		_, err = s.hold(ctx, cluster, workerID, token, lastTimestampMS, "")
	}
	if err != nil {
		return fmt.Errorf("release worker ID %d in cluster %q: %w", workerID, cluster, err)
	}
	return nil
}

// hold runs holdScript and turns its refusals into the workerlease
// sentinels; ttlMS "" releases.
func (s *Store) hold(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64, ttlMS string) ([]string, error) {
	reply, err := holdScript.Run(ctx, s.c, []string{s.leaseKey(cluster)},
		workerID, token, lastTimestampMS, ttlMS).StringSlice()
	switch {
	case err != nil:
		return nil, err
	case len(reply) == 0:
		return nil, badReply(reply)
	}
	switch reply[0] {
	case "ok":
		return reply, nil
	case "not_assigned":
		return nil, workerlease.ErrNotAssigned
	case "token_mismatch":
		return nil, workerlease.ErrTokenMismatch
	case "expired":
		return nil, workerlease.ErrLeaseExpired
	}
	return nil, badReply(reply)
}

// CheckLayout records the snowflake layout of cluster on first use and
// refuses a different one afterwards with an error wrapping
// snowflake.ErrLayoutMismatch: holders of one cluster with different worker
// bits or epochs could compose the same ID from different parts, and a later
// epoch repeats earlier IDs. The record never changes once made.
func (s *Store) CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error {
	err := s.checkCluster(cluster)
	var have []string
	if err == nil {
		have, err = layoutScript.Run(ctx, s.c, []string{s.layoutKey(cluster)}, epochMS, workerBits).StringSlice()
	}
	if err == nil && len(have) != 2 {
		err = badReply(have)
	}
	if err != nil {
		return fmt.Errorf("check layout of cluster %q: %w", cluster, err)
	}
	n, err := parseInts(have)
	if err != nil {
		return fmt.Errorf("check layout of cluster %q: %w", cluster, err)
	}
	if n[0] != epochMS || n[1] != int64(workerBits) {
		return snowflake.LayoutMismatch(cluster, n[0], int(n[1]), epochMS, workerBits)
	}
	return nil
}

// checkCluster refuses what only Redis needs refused: a store opened with a
// braced key prefix (s.err), and a cluster that cannot be a hash tag. The
// Service never passes one (workerlease.ValidCluster); this guards the
// store's own key layout for its other callers (tests, tools).
func (s *Store) checkCluster(cluster string) error {
	switch {
	case s.err != nil:
		return s.err
	case cluster == "" || strings.ContainsAny(cluster, "{}"):
		// An empty tag "{}" makes Redis hash the whole key, and a '}' in
		// the cluster would end the tag early.
		return workerlease.ErrInvalidCluster
	}
	return nil
}

// badReply is a script reply this package does not know, such as a field
// edited by hand to a value that is not a number.
func badReply(reply []string) error {
	return fmt.Errorf("unexpected reply from the redis lease script: %q", reply)
}

func parseInts(ss []string) ([]int64, error) {
	n := make([]int64, len(ss))
	for i, s := range ss {
		var err error
		if n[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, errors.Join(badReply(ss), err)
		}
	}
	return n, nil
}
