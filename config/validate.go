package config

import (
	"errors"
	"slices"
	"time"

	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Validate checks c by the domain's own rules and converts its durations
// and epoch. Its errors are about one key (keyError): Load heads them with
// where that key's value came from.
func (c Config) Validate() (Settings, error) {
	s := Settings{Config: c, RandomStart: true}
	if c.Snowflake.RandomSequenceStart != nil {
		s.RandomStart = *c.Snowflake.RandomSequenceStart
	}
	if c.HTTPAddr == "" {
		return s, keyErr("http_addr", `must not be empty`)
	}
	if !slices.Contains(drivers.SQL(), c.Driver) {
		return s, keyErr("driver", `%q is not %s`, c.Driver, drivers.Quoted(drivers.SQL()))
	}
	if c.DSN == "" {
		return s, keyErr("dsn", `must not be empty`)
	}
	switch {
	case !slices.Contains(drivers.Lease(), c.Lease.Driver):
		return s, keyErr("lease.driver", `%q is not %s`, c.Lease.Driver, drivers.Quoted(drivers.Lease()))
	case c.Lease.Driver == drivers.LeaseSQL && c.Lease.DSN != "":
		return s, keyErr("lease.dsn", `must be empty with lease.driver "sql", which keeps leases in the main store (dsn)`)
	case c.Lease.Driver != drivers.LeaseSQL && c.Lease.DSN == "":
		return s, keyErr("lease.dsn", `must name the %s server with lease.driver %q`, c.Lease.Driver, c.Lease.Driver)
	}
	if c.MaxBatch < 1 || c.MaxBatch > segment.MaxMaxBatch {
		return s, keyErr("max_batch", `%d is outside 1..%d`, c.MaxBatch, segment.MaxMaxBatch)
	}
	if c.MaxRange < 1 || c.MaxRange > segment.MaxMaxRange {
		return s, keyErr("max_range", `%d is outside 1..%d`, c.MaxRange, segment.MaxMaxRange)
	}
	if c.MaxConns < 1 || c.MaxConns > maxMaxConns {
		return s, keyErr("max_conns", `%d is outside 1..%d`, c.MaxConns, maxMaxConns)
	}
	if c.RespMaxConns < 1 || c.RespMaxConns > maxMaxConns {
		return s, keyErr("resp_max_conns", `%d is outside 1..%d`, c.RespMaxConns, maxMaxConns)
	}
	if c.RespMaxPending < minRespMaxPending || c.RespMaxPending > maxRespMaxPending {
		return s, keyErr("resp_max_pending", `%d is outside %d..%d (bytes)`, c.RespMaxPending, minRespMaxPending, maxRespMaxPending)
	}
	if c.RespMaxPendingTotal < int64(c.RespMaxPending) || c.RespMaxPendingTotal > maxRespMaxPendingTotal {
		return s, keyErr("resp_max_pending_total", `%d is outside resp_max_pending (%d)..%d (bytes)`, c.RespMaxPendingTotal, c.RespMaxPending, int64(maxRespMaxPendingTotal))
	}
	if c.RespAddr != "" && c.RespAddr == c.HTTPAddr {
		return s, keyErr("resp_addr", `%q is http_addr too; give the Redis protocol a port of its own (":6380")`, c.RespAddr)
	}
	if c.Metrics.MaxTagSeries < 1 || c.Metrics.MaxTagSeries > maxMaxTagSeries {
		return s, keyErr("metrics.max_tag_series", `%d is outside 1..%d`, c.Metrics.MaxTagSeries, maxMaxTagSeries)
	}
	if c.Segment.MaxStep < 1 {
		return s, keyErr("segment.max_step", `%d must be at least 1`, c.Segment.MaxStep)
	}
	// 0 would mean the domain's default, one region: not what "count": 0
	// says. The domain's rule names the key at fault.
	if c.Region.Count == 0 {
		return s, keyErr("region.count", "0 must be from 1 to %d", segment.MaxRegions)
	}
	if e, refused := errs.Describe(c.Region.Region().Check()); refused {
		v := c.Region.Count
		if e.Field == "region.id" {
			v = c.Region.ID
		}
		return s, keyErr(e.Field, "%d %s", v, e.Reason)
	}
	if c.Snowflake.WorkerBits < 1 || c.Snowflake.WorkerBits > 21 {
		return s, keyErr("snowflake.worker_bits", `%d is outside 1..21`, c.Snowflake.WorkerBits)
	}
	if !workerlease.ValidCluster(c.Snowflake.Cluster) {
		return s, keyErr("snowflake.cluster", `%q must match ^[A-Za-z0-9_.:-]{1,64}$`, c.Snowflake.Cluster)
	}
	epoch, err := time.Parse(time.RFC3339, c.Snowflake.Epoch)
	if err != nil {
		return s, keyErr("snowflake.epoch", `%q is not an RFC 3339 time`, c.Snowflake.Epoch)
	}
	s.Epoch = epoch
	for _, d := range []struct {
		key string
		val string
		dst *time.Duration
		min time.Duration
	}{
		{"shutdown_drain", c.ShutdownDrain, &s.Durations.ShutdownDrain, 0},
		{"shutdown_timeout", c.ShutdownTimeout, &s.Durations.ShutdownTimeout, 0},
		{"resp_idle_timeout", c.RespIdleTimeout, &s.Durations.RespIdleTimeout, time.Second},
		// Below a second a client on a slow link could be cut while
		// sending a large command.
		{"resp_command_timeout", c.RespCommandTimeout, &s.Durations.RespCommandTimeout, time.Second},
		{"segment.tag_refresh", c.Segment.TagRefresh, &s.Durations.TagRefresh, 100 * time.Millisecond},
		{"snowflake.lease_ttl", c.Snowflake.LeaseTTL, &s.Durations.LeaseTTL, time.Second},
		// 0 would mean the generator's default, 10ms: not what "0s" says.
		{"snowflake.max_drift_block", c.Snowflake.MaxDriftBlock, &s.Durations.MaxDriftBlock, time.Millisecond},
		{"snowflake.max_drift_error", c.Snowflake.MaxDriftError, &s.Durations.MaxDriftError, 0},
		// 0 would mean segment's default, 1s: not what "0s" says.
		{"dated.max_clock_skew", c.Dated.MaxClockSkew, &s.Durations.DatedMaxClockSkew, minMaxClockSkew},
	} {
		v, err := time.ParseDuration(d.val)
		if err != nil {
			return s, keyErr(d.key, "%q is not a duration like \"5s\"", d.val)
		}
		if v < d.min {
			return s, keyErr(d.key, "%s is below the minimum %s", v, d.min)
		}
		*d.dst = v
	}
	// The drain is part of the stop; what is left after it is shared by
	// the front ends' shutdown and the hand-back (frontend.Stop).
	if s.Durations.ShutdownTimeout <= s.Durations.ShutdownDrain {
		return s, keyErr("shutdown_timeout", `%s must exceed shutdown_drain (%s)`, s.Durations.ShutdownTimeout, s.Durations.ShutdownDrain)
	}
	if s.Durations.MaxDriftError < s.Durations.MaxDriftBlock {
		return s, keyErr("snowflake.max_drift_error", `must not be below snowflake.max_drift_block`)
	}
	// The generator's own checks, reported by key rather than at start: an
	// epoch after now, or so early that the time bits run out within 10
	// years.
	if _, err := snowflake.New(snowflake.Settings{Epoch: epoch, WorkerBits: c.Snowflake.WorkerBits,
		MaxDriftBlock: s.Durations.MaxDriftBlock, MaxDriftError: s.Durations.MaxDriftError}); err != nil {
		key := "snowflake.max_drift_error"
		if errors.Is(err, snowflake.ErrInvalidLayout) || errors.Is(err, snowflake.ErrLayoutTooShort) {
			key = "snowflake.epoch"
		}
		return s, keyErr(key, "%w", err)
	}
	// Each region's snowflake worker IDs are a range of their own: every
	// region needs one at least.
	layout, err := snowflake.NewLayout(epoch, c.Snowflake.WorkerBits)
	if err == nil {
		_, _, err = layout.RegionWorkerIDs(c.Region.Count, c.Region.ID)
	}
	if err != nil {
		return s, keyErr("region.count", "%w", err)
	}
	return s, nil
}
