package client

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultMaxBatch is the server's own default max_batch.
	DefaultMaxBatch = 1000
	// MaxMaxBatch is the largest max_batch a server accepts.
	MaxMaxBatch = 100_000
	// DefaultMaxRange is the server's own default max_range.
	DefaultMaxRange = 1_000_000
	// MaxMaxRange is the largest max_range a server accepts.
	MaxMaxRange = 100_000_000
	// DefaultSnowflakeMaxAge bounds the age of a buffered snowflake ID.
	DefaultSnowflakeMaxAge = time.Second
	// DefaultDatedMaxAge bounds the age of a buffered ID of a dated tag
	// whose answer did not say when its period ends.
	DefaultDatedMaxAge = time.Second
	// DefaultRequestTimeout bounds one HTTP attempt on one instance.
	DefaultRequestTimeout = 2 * time.Second
)

// Config configures a Client. Zero values mean the documented defaults.
type Config struct {
	// URLs are the base URLs of idalloc instances, as "http://host:port"
	// (a path prefix is kept: "https://lb/idalloc"). At least one; each must
	// be http or https with a host and no query or fragment. They are used
	// round robin; see Client for how failing ones are skipped.
	URLs []string
	// AdminToken is sent as "Authorization: Bearer <AdminToken>" on the lease
	// calls (POST /workerid*), which are admin calls on a server with
	// admin_token set. "" sends none: a server without admin_token serves
	// them to loopback clients. Segment and snowflake calls never send it.
	AdminToken string
	// Token is a per-tag access token (docs/api.md §12), sent as
	// "Authorization: Bearer <Token>" on every ID call (/alloc,
	// /snowflake), which a server with alloc_auth on requires: without
	// it, or with one not allowed a tag, those calls fail with
	// ErrUnauthorized or ErrForbidden. "" sends none. Lease calls send
	// AdminToken instead.
	Token string
	// Cluster is the worker-ID cluster of lease calls. "" means the server's
	// default (its snowflake.cluster).
	Cluster string
	// MaxBatch caps the count of one /alloc or /snowflake batch asked for
	// as a list: snowflake IDs, and the tags whose IDs are not runs of
	// consecutive numbers (scrambled and dated tags). The client buffers
	// up to two batches per tag. 0 means DefaultMaxBatch (1000); outside
	// 1..100000: ErrInvalidConfig. It should not exceed the servers'
	// max_batch; when an instance refuses a count, the client halves its cap
	// for the rest of its life and asks again.
	MaxBatch int
	// MaxRange caps the count of one /alloc fetch asked for as ranges
	// (as=ranges), as sequential and fixed_length tags' IDs are: a few
	// bytes in the buffer however many IDs, so the cap bounds only the IDs
	// a process may leave unused at exit (a fast caller's buffer holds up to about two fetches
	// and a fifth). 0 means DefaultMaxRange (1,000,000); outside
	// 1..100,000,000: ErrInvalidConfig. It should not exceed the servers'
	// max_range; a refused count halves it, as for MaxBatch.
	MaxRange int
	// SnowflakeMaxAge is how long a buffered snowflake ID may be handed out
	// after its batch was requested: an ID's timestamp tells when it was
	// made, so an older one would misdate what it names. 0 means 1s;
	// negative: ErrInvalidConfig.
	SnowflakeMaxAge time.Duration
	// DatedMaxAge is how long a buffered ID of a dated tag (docs/api.md §11)
	// may be handed out after its batch was requested, when the answer
	// does not say when the IDs' period ends (period_ends_in_ms): the ID
	// carries its period's stamp, which must be the period in which the
	// caller gets it (see Client.NextText). 0 means 1s; negative:
	// ErrInvalidConfig.
	DatedMaxAge time.Duration
	// RequestTimeout bounds one HTTP attempt on one instance (connect,
	// request and answer); the caller's context bounds the whole call. 0
	// means 2s; negative: ErrInvalidConfig.
	RequestTimeout time.Duration
	// HTTPClient sends every request. nil means one of the Client's own:
	// keep-alive, up to 64 idle connections per instance, 1s connect
	// timeout, closed by Close. A given one is used as it is (its Timeout,
	// if set, applies on top of RequestTimeout) and not closed.
	HTTPClient *http.Client
	// Logger receives instance events (set aside, batch cap lowered) and the
	// Keeper's lease events. nil means no logging.
	Logger *slog.Logger
	// Now is the clock, for tests. It must carry a monotonic reading, as
	// time.Now's does. nil means time.Now.
	Now func() time.Time
}

// New returns a Client for cfg. It makes no request: instances are first
// contacted by the first call. Errors (ErrInvalidConfig, naming the field):
// no URLs, a URL that is not http(s)://host[/prefix], MaxBatch outside
// 1..100000, MaxRange outside 1..100000000, a negative SnowflakeMaxAge,
// DatedMaxAge or RequestTimeout.
func New(cfg Config) (*Client, error) {
	if len(cfg.URLs) == 0 {
		return nil, fmt.Errorf("%w: URLs: none given", ErrInvalidConfig)
	}
	insts := make([]*instance, 0, len(cfg.URLs))
	for i, raw := range cfg.URLs {
		base, err := baseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: URLs[%d]: %v", ErrInvalidConfig, i, err)
		}
		insts = append(insts, &instance{base: base, idx: i})
	}
	switch {
	case cfg.MaxBatch == 0:
		cfg.MaxBatch = DefaultMaxBatch
	case cfg.MaxBatch < 1 || cfg.MaxBatch > MaxMaxBatch:
		return nil, fmt.Errorf("%w: MaxBatch %d is outside 1..%d", ErrInvalidConfig, cfg.MaxBatch, MaxMaxBatch)
	}
	switch {
	case cfg.MaxRange == 0:
		cfg.MaxRange = DefaultMaxRange
	case cfg.MaxRange < 1 || cfg.MaxRange > MaxMaxRange:
		return nil, fmt.Errorf("%w: MaxRange %d is outside 1..%d", ErrInvalidConfig, cfg.MaxRange, MaxMaxRange)
	}
	switch {
	case cfg.SnowflakeMaxAge == 0:
		cfg.SnowflakeMaxAge = DefaultSnowflakeMaxAge
	case cfg.SnowflakeMaxAge < 0:
		return nil, fmt.Errorf("%w: SnowflakeMaxAge %v is negative", ErrInvalidConfig, cfg.SnowflakeMaxAge)
	}
	switch {
	case cfg.DatedMaxAge == 0:
		cfg.DatedMaxAge = DefaultDatedMaxAge
	case cfg.DatedMaxAge < 0:
		return nil, fmt.Errorf("%w: DatedMaxAge %v is negative", ErrInvalidConfig, cfg.DatedMaxAge)
	}
	switch {
	case cfg.RequestTimeout == 0:
		cfg.RequestTimeout = DefaultRequestTimeout
	case cfg.RequestTimeout < 0:
		return nil, fmt.Errorf("%w: RequestTimeout %v is negative", ErrInvalidConfig, cfg.RequestTimeout)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		insts:      insts,
		hc:         cfg.HTTPClient,
		token:      cfg.AdminToken,
		tagToken:   cfg.Token,
		cluster:    cfg.Cluster,
		maxAge:     cfg.SnowflakeMaxAge,
		datedAge:   cfg.DatedMaxAge,
		reqTimeout: cfg.RequestTimeout,
		now:        cfg.Now,
		base:       cfg.Now(),
		log:        cfg.Logger,
		closedC:    make(chan struct{}),
	}
	if c.hc == nil {
		c.own = newTransport(len(insts))
		c.hc = &http.Client{Transport: c.own}
	}
	c.maxBatch.field, c.maxBatch.listed = "MaxBatch", true
	c.maxBatch.v.Store(int64(cfg.MaxBatch))
	c.maxRange.field = "MaxRange"
	c.maxRange.v.Store(int64(cfg.MaxRange))
	c.tags.Store(&map[string]*buffer{})
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.snow = newBuffer(c, "", c.fetchSnowflake, c.maxAge, true)
	return c, nil
}

// baseURL checks raw and returns it without a trailing slash.
func baseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: want http:// or https://", raw)
	case u.Host == "":
		return "", fmt.Errorf("%q: no host", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", fmt.Errorf("%q: want no query, fragment or user info", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// newTransport is keep-alive HTTP/1.1 with room for the parallel fetches
// of many tags and the lease calls. The dial timeout is short because a
// refused or unreachable instance should be set aside at once, not hold a
// fetch the buffer is waiting for.
func newTransport(instances int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConnsPerHost = 64
	t.MaxIdleConns = 64 * instances
	t.IdleConnTimeout = 90 * time.Second
	return t
}
