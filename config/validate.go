package config

import (
	"slices"
	"time"

	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Validate checks c by the domain's own rules and converts its epoch. Its
// errors are about one key (keyError): Load heads them with where that
// key's value came from. The checks go by concern, each refusing the
// first key at fault.
func (c Config) Validate() (Settings, error) {
	s := Settings{Config: c, RandomStart: true}
	if c.Snowflake.RandomSequenceStart != nil {
		s.RandomStart = *c.Snowflake.RandomSequenceStart
	}
	for _, check := range []func(Config) error{
		checkListeners, checkDriver, checkStore, checkLeaseStore, checkLimits, checkMetrics,
		checkSegment, checkRegion, checkDurations, checkShutdown,
	} {
		if err := check(c); err != nil {
			return s, err
		}
	}
	var err error
	s.Epoch, s.Layout, err = checkSnowflake(c)
	return s, err
}

// The values of snowflake.layout.
const (
	// LayoutDefault is snowflake.NewLayout's: 63-bit IDs.
	LayoutDefault = "default"
	// LayoutJS53 is snowflake.NewJS53Layout's: IDs at most 2^53-1.
	LayoutJS53 = "js53"
)

// checkListeners checks the front ends' addresses and connection caps.
func checkListeners(c Config) error {
	switch {
	case c.HTTPAddr == "":
		return keyErr("http_addr", `must not be empty`)
	case c.MaxConns < 1 || c.MaxConns > maxMaxConns:
		return keyErr("max_conns", `%d is outside 1..%d`, c.MaxConns, maxMaxConns)
	case c.RespMaxConns < 1 || c.RespMaxConns > maxMaxConns:
		return keyErr("resp_max_conns", `%d is outside 1..%d`, c.RespMaxConns, maxMaxConns)
	case c.RespMaxPending < minRespMaxPending || c.RespMaxPending > maxRespMaxPending:
		return keyErr("resp_max_pending", `%d is outside %d..%d (bytes)`, c.RespMaxPending, minRespMaxPending, maxRespMaxPending)
	case c.RespMaxPendingTotal < int64(c.RespMaxPending) || c.RespMaxPendingTotal > maxRespMaxPendingTotal:
		return keyErr("resp_max_pending_total", `%d is outside resp_max_pending (%d)..%d (bytes)`, c.RespMaxPendingTotal, c.RespMaxPending, int64(maxRespMaxPendingTotal))
	case c.RespAddr != "" && c.RespAddr == c.HTTPAddr:
		return keyErr("resp_addr", `%q is http_addr too; give the Redis protocol a port of its own (":6380")`, c.RespAddr)
	case c.GRPCMaxConns < 1 || c.GRPCMaxConns > maxMaxConns:
		return keyErr("grpc_max_conns", `%d is outside 1..%d`, c.GRPCMaxConns, maxMaxConns)
	case c.GRPCMaxStreams < 1 || c.GRPCMaxStreams > maxMaxStreams:
		return keyErr("grpc_max_streams", `%d is outside 1..%d`, c.GRPCMaxStreams, maxMaxStreams)
	case c.GRPCAddr != "" && (c.GRPCAddr == c.HTTPAddr || c.GRPCAddr == c.RespAddr):
		return keyErr("grpc_addr", `%q is http_addr or resp_addr too; give gRPC a port of its own (":9090")`, c.GRPCAddr)
	}
	return nil
}

// checkDriver checks that driver names a SQL store.
func checkDriver(c Config) error {
	if !slices.Contains(drivers.SQL(), c.Driver) {
		return keyErr("driver", `%q is not %s`, c.Driver, drivers.Quoted(drivers.SQL()))
	}
	return nil
}

// checkStore checks the main store's address.
func checkStore(c Config) error {
	if c.DSN == "" {
		return keyErr("dsn", `must not be empty`)
	}
	return nil
}

// checkLeaseStore checks where worker-ID leases are kept.
func checkLeaseStore(c Config) error {
	switch {
	case !slices.Contains(drivers.Lease(), c.Lease.Driver):
		return keyErr("lease.driver", `%q is not %s`, c.Lease.Driver, drivers.Quoted(drivers.Lease()))
	case c.Lease.Driver == drivers.LeaseSQL && c.Lease.DSN != "":
		return keyErr("lease.dsn", `must be empty with lease.driver "sql", which keeps leases in the main store (dsn)`)
	case c.Lease.Driver != drivers.LeaseSQL && c.Lease.DSN == "":
		return keyErr("lease.dsn", `must name the %s server with lease.driver %q`, c.Lease.Driver, c.Lease.Driver)
	}
	return nil
}

// checkLimits checks the caps of one request's IDs by segment's bounds.
func checkLimits(c Config) error {
	switch {
	case c.MaxBatch < 1 || c.MaxBatch > segment.MaxMaxBatch:
		return keyErr("max_batch", `%d is outside 1..%d`, c.MaxBatch, segment.MaxMaxBatch)
	case c.MaxRange < 1 || c.MaxRange > segment.MaxMaxRange:
		return keyErr("max_range", `%d is outside 1..%d`, c.MaxRange, segment.MaxMaxRange)
	}
	return nil
}

// checkMetrics checks what GET /metrics shows.
func checkMetrics(c Config) error {
	if c.Metrics.MaxTagSeries < 1 || c.Metrics.MaxTagSeries > maxMaxTagSeries {
		return keyErr("metrics.max_tag_series", `%d is outside 1..%d`, c.Metrics.MaxTagSeries, maxMaxTagSeries)
	}
	return nil
}

// checkSegment checks the segment allocator's own keys.
func checkSegment(c Config) error {
	if c.Segment.MaxStep < 1 {
		return keyErr("segment.max_step", `%d must be at least 1`, c.Segment.MaxStep)
	}
	return nil
}

// checkRegion checks region.count and region.id by segment's rule, which
// names the key at fault.
func checkRegion(c Config) error {
	// 0 would mean the domain's default, one region: not what "count": 0
	// says.
	if c.Region.Count == 0 {
		return keyErr("region.count", "0 must be from 1 to %d", segment.MaxRegions)
	}
	if e, refused := errs.Describe(c.Region.Region().Check()); refused {
		v := c.Region.Count
		if e.Field == "region.id" {
			v = c.Region.ID
		}
		return keyErr(e.Field, "%d %s", v, e.Reason)
	}
	return nil
}

// checkShutdown checks the stop's durations against each other: the drain
// is part of the stop; what is left after it is shared by the front ends'
// shutdown and the hand-back (frontend.Stop).
func checkShutdown(c Config) error {
	if drain, timeout := c.ShutdownDrain.Duration(), c.ShutdownTimeout.Duration(); timeout <= drain {
		return keyErr("shutdown_timeout", `%s must exceed shutdown_drain (%s)`, timeout, drain)
	}
	return nil
}

// checkSnowflake checks the snowflake keys by the generator's own rules
// and returns the epoch and the layout.
func checkSnowflake(c Config) (time.Time, snowflake.Layout, error) {
	sf := c.Snowflake
	newLayout, maxWorkerBits := snowflake.NewLayout, 21
	switch sf.Layout {
	case LayoutDefault:
	case LayoutJS53:
		newLayout, maxWorkerBits = snowflake.NewJS53Layout, 11
	default:
		return time.Time{}, snowflake.Layout{}, keyErr("snowflake.layout", `%q is neither %q nor %q`, sf.Layout, LayoutDefault, LayoutJS53)
	}
	if sf.WorkerBits < 1 || sf.WorkerBits > maxWorkerBits {
		return time.Time{}, snowflake.Layout{}, keyErr("snowflake.worker_bits", `%d is outside 1..%d`, sf.WorkerBits, maxWorkerBits)
	}
	if !workerlease.ValidCluster(sf.Cluster) {
		return time.Time{}, snowflake.Layout{}, keyErr("snowflake.cluster", `%q must match ^[A-Za-z0-9_.:-]{1,64}$`, sf.Cluster)
	}
	epoch, err := time.Parse(time.RFC3339, sf.Epoch)
	if err != nil {
		return time.Time{}, snowflake.Layout{}, keyErr("snowflake.epoch", `%q is not an RFC 3339 time`, sf.Epoch)
	}
	block, maxErr := sf.MaxDriftBlock.Duration(), sf.MaxDriftError.Duration()
	if maxErr < block {
		return epoch, snowflake.Layout{}, keyErr("snowflake.max_drift_error", `must not be below snowflake.max_drift_block`)
	}
	// The generator's own checks, reported by key rather than at start: an
	// epoch after now, or so early that the time bits run out within 10
	// years.
	layout, err := newLayout(epoch, sf.WorkerBits)
	if err == nil {
		err = layout.CheckLifetime(time.Now())
	}
	if err != nil {
		return epoch, snowflake.Layout{}, keyErr("snowflake.epoch", "%w", err)
	}
	if _, err := snowflake.New(snowflake.Settings{Layout: layout, MaxDriftBlock: block, MaxDriftError: maxErr}); err != nil {
		return epoch, layout, keyErr("snowflake.max_drift_error", "%w", err)
	}
	// Each region's snowflake worker IDs are a range of their own: every
	// region needs one at least.
	if _, _, err := layout.RegionWorkerIDs(c.Region.Count, c.Region.ID); err != nil {
		return epoch, layout, keyErr("region.count", "%w", err)
	}
	return epoch, layout, nil
}
