// Package redislease provides a workerlease.Store on Redis (go-redis v9):
// worker-ID leases for processes that run their own snowflake generator,
// with the same contract as the SQL stores and workerlease.MemoryStore.
//
// Each grant, renew and release is one Lua script, so it is one atomic step
// on the server: the scan for a free worker ID and the claim of it cannot be
// split by another holder, and the compare-and-set on the token needs no
// WATCH loop.
//
// Expiry is judged by Redis's own clock (TIME, read inside the scripts),
// never the caller's. Holders run on machines whose clocks drift apart; if
// each judged expiry by its own clock, one running ahead would take over a
// worker ID that its holder still believes it holds, and two generators
// would issue IDs with the same worker ID. One clock that both sets and
// judges every expiry of a cluster rules that out. (After a failover the
// new primary's clock takes over; keep the Redis hosts' clocks in sync.)
//
// All keys of one cluster share one hash slot — the cluster name is the
// key's hash tag, "<prefix>{<cluster>}" — because Redis Cluster runs a
// script only on keys of one slot: so every script runs on one node, and
// different clusters still spread over the nodes.
//
// Redis replicates to its replicas asynchronously: a failover can lose the
// last writes a primary acknowledged, a grant or a raised last_timestamp_ms
// among them. Where that matters, run a primary with appendfsync always and
// no automatic failover, or use the SQL store.
package redislease

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/workerlease"
)

var _ workerlease.Store = (*Store)(nil)

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "idalloc:workerlease:"

// Options tune a Store. The zero value is the default.
type Options struct {
	// Prefix starts every key the Store writes, so that one Redis can hold
	// several deployments. "" means DefaultPrefix. It must not hold '{' or
	// '}', which would move the hash tag.
	Prefix string
}

// Store is a workerlease.Store on Redis. Per cluster it keeps one hash,
// "<prefix>{<cluster>}", with four fields per worker ID that has ever been
// leased ("<id>:t" token, "" once released; "<id>:h" holder; "<id>:e" expiry
// in Unix ms by Redis's clock; "<id>:l" last_timestamp_ms), and the cluster's
// snowflake layout in "<prefix>{<cluster>}:layout". Rows are never deleted:
// a released or expired worker ID keeps its last_timestamp_ms for the next
// holder. A Store starts no goroutines and is safe for concurrent use.
type Store struct {
	c      redis.UniversalClient
	owned  bool // Close closes c
	prefix string
	// err refuses every call when the Options were invalid: New has no
	// error result, and a Store that silently ignored its prefix could
	// share keys with another deployment.
	err error

	closeOnce sync.Once
	closeErr  error
}

// New returns a Store on c. It does not own c: Close leaves it open. A
// Prefix holding '{' or '}' makes every call fail with an error wrapping
// workerlease.ErrInvalidConfig.
func New(c redis.UniversalClient, opts Options) *Store {
	s := &Store{c: c, prefix: opts.Prefix}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if strings.ContainsAny(s.prefix, "{}") {
		s.err = fmt.Errorf("%w: redis key prefix %q holds '{' or '}', which would move the keys' hash tag",
			workerlease.ErrInvalidConfig, s.prefix)
	}
	return s
}

// Open returns a Store on its own client for dsn, which Close closes. dsn is
// a Redis URL: redis://[[user]:password@]host:port/db (rediss:// for TLS,
// unix:///path.sock), with go-redis's query options (dial_timeout=1s,
// max_retries=…); redis+cluster:// or rediss+cluster:// with further nodes as
// addr=host:port query options for Redis Cluster. Open does not dial: a
// Redis that is down makes each call fail (workerlease.Service reports it as
// ErrUnavailable) until it answers, rather than the start. Errors: a dsn
// that does not parse, or an invalid Prefix, wrapping
// workerlease.ErrInvalidConfig. The error never holds the password.
func Open(dsn string, opts Options) (*Store, error) {
	c, err := newClient(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: redis dsn: %w", workerlease.ErrInvalidConfig, err)
	}
	s := New(c, opts)
	s.owned = true
	if s.err != nil {
		_ = c.Close()
		return nil, s.err
	}
	return s, nil
}

// newClient builds, without dialling, the client for dsn.
func newClient(dsn string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return nil, errors.New("want a URL such as redis://host:6379/0")
	}
	if base, ok := strings.CutSuffix(scheme, "+cluster"); ok {
		o, err := redis.ParseClusterURL(base + "://" + rest)
		if err != nil {
			return nil, redactURL(err)
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(dsn)
	if err != nil {
		return nil, redactURL(err)
	}
	return redis.NewClient(o), nil
}

// redactURL drops the URL that net/url quotes in its errors: it may hold a
// password.
func redactURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// Close closes the client if Open made it; a Store from New leaves its
// client open. Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.owned {
			s.closeErr = s.c.Close()
		}
	})
	return s.closeErr
}

// leaseKey is the hash of cluster's leases. The braces make the cluster
// the hash tag: every key of a cluster lands in one slot.
func (s *Store) leaseKey(cluster string) string {
	return s.prefix + "{" + cluster + "}"
}

// layoutKey holds cluster's snowflake layout, in the same slot as its
// leases.
func (s *Store) layoutKey(cluster string) string {
	return s.leaseKey(cluster) + ":layout"
}
