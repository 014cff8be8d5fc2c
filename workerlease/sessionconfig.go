package workerlease

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// SessionConfig tunes a Session. Zero values mean the documented defaults.
type SessionConfig struct {
	// Service grants and renews the lease; required.
	Service *Service
	// Cluster is the cluster to lease from; "" means the Service's default.
	Cluster string
	// Lease, when set, is a grant already made by Service (through its
	// Acquire, or a front end of it such as the HTTP API), which the
	// session keeps instead of acquiring one, as etcd's
	// concurrency.WithLease: NewSession makes no Acquire, and the rest is
	// as for a grant of its own (the first renewal before the fence opens,
	// the wait of a grant with NoHistory, CheckLayout). Its Cluster ("" is
	// the Service's default), WorkerID and Token must be ones the Service
	// accepts, and Cluster, when set too, must name its cluster
	// (ErrInvalidConfig). Once NewSession has accepted the config it owns
	// the grant: an error after that releases it, as one it acquired. A
	// Keeper acquires each of its leases and refuses a Lease.
	Lease *Lease
	// Now is the holder's clock. It should carry a monotonic reading (as
	// time.Now's does) so that the fence is immune to wall-clock steps; a
	// generator fenced by the Session must use the same clock. nil means
	// time.Now. Waits use package time's timers, which testing/synctest
	// fakes, so tests need no clock of their own for them.
	Now func() time.Time
	// Margin is subtracted from the TTL to get the local deadline, to absorb
	// the drift between this clock's rate and the store's. 0 means TTL/10; it
	// must be below TTL/2 so renewals (every TTL/3) can happen before the
	// deadline.
	Margin time.Duration
	// RetryInterval is the wait between failed renewals (jittered, and
	// never past the deadline). 0 means 1s.
	RetryInterval time.Duration
	// ClockSkew is the most the clocks of two holders of one worker ID may
	// disagree (snowflake.max_drift_error). A grant with no history
	// (Lease.NoHistory) opens its fence only TTL + ClockSkew after it was
	// asked for: by then any holder of a lease the store forgot has been
	// refused a renewal or passed its own deadline, and its last IDs lie
	// below this holder's clock. Negative is an error.
	ClockSkew time.Duration
	// CheckLayout, when set, is called with the granted lease's cluster
	// after every grant, before the session is used. A generator's owner
	// sets it to check the cluster's recorded snowflake layout
	// (snowflake/leased's CheckEachLease): a store that forgot its leases
	// forgot the cluster's layout with them, and the first holder after
	// that records its own, so a holder of another layout must learn of it
	// at its next grant, not only at its process's start. An error
	// releases the grant and ends NewSession with it; a Keeper retries.
	// workerlease knows no layout: it only makes the call.
	CheckLayout func(ctx context.Context, cluster string) error
	// Logger receives lease events. nil means no logging.
	Logger *slog.Logger

	// randN returns a random duration in [0, n) for the retries' jitter;
	// rand.N unless a test fixes it.
	randN func(n time.Duration) time.Duration
}

// resolve applies the defaults and checks the rest (ErrInvalidConfig).
func (c SessionConfig) resolve() (SessionConfig, error) {
	if c.Service == nil {
		return c, fmt.Errorf("%w: nil Service", ErrInvalidConfig)
	}
	if c.Lease != nil {
		l := *c.Lease // the session's own copy
		cluster, err := c.Service.validate(l.Cluster, l.WorkerID, l.Token, 0)
		switch {
		case err != nil:
			return c, fmt.Errorf("%w: Lease: %w", ErrInvalidConfig, err)
		case c.Cluster != "" && c.Cluster != cluster:
			return c, fmt.Errorf("%w: Lease is of cluster %q, not of Cluster %q", ErrInvalidConfig, cluster, c.Cluster)
		}
		l.Cluster = cluster
		c.Lease = &l
	}
	ttl := c.Service.TTL()
	switch {
	case c.Margin < 0 || c.Margin >= ttl/2:
		return c, fmt.Errorf("%w: Margin %v is outside [0, TTL/2 = %v)", ErrInvalidConfig, c.Margin, ttl/2)
	case c.Margin == 0:
		c.Margin = ttl / 10
	}
	if c.ClockSkew < 0 {
		return c, fmt.Errorf("%w: ClockSkew %v is negative", ErrInvalidConfig, c.ClockSkew)
	}
	switch {
	case c.RetryInterval < 0:
		return c, fmt.Errorf("%w: RetryInterval %v is negative", ErrInvalidConfig, c.RetryInterval)
	case c.RetryInterval == 0:
		c.RetryInterval = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.randN == nil {
		c.randN = rand.N[time.Duration]
	}
	return c, nil
}
