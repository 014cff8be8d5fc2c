// Package etcdlease is a workerlease.Store on etcd, for library users who
// already run etcd and for instances configured with lease.driver "etcd".
//
// Expiry is etcd's own: each grant takes an etcd lease with the TTL, the key
// that says who holds a worker ID is attached to it, and etcd deletes that
// key when the lease runs out. A holder whose clock is wrong, or a caller
// whose NowMS is hours off, can therefore neither stretch its own lease nor
// declare someone else's over: only etcd's lessor ends a lease, and Renew is
// a keep-alive of that lease.
//
// A grant is one transaction: it compares that the worker ID's hold key is
// absent and that its last-timestamp key is the revision the caller read,
// and puts both. A caller that loses the comparison to another grant (or to
// a late holder raising its last timestamp) reads again and tries the next
// candidate. Renew and Release are compare-and-sets the same way, on the
// revisions of keys that name the caller's token, so no sequence of reads
// and writes by other processes can make two holders of one worker ID.
//
// Keys, under Options.Prefix (default "/idalloc/workerlease/") and the
// cluster name (path-escaped):
//
//	<prefix><cluster>/hold/<id>  {"token","holder","lease"}, on the etcd lease
//	<prefix><cluster>/last/<id>  {"last_timestamp_ms","token"}, kept for good
//	<prefix><cluster>/layout     {"epoch_ms","worker_bits"}, written once
//
// The last key outlives the hold key on purpose: the next holder must start
// after the timestamps of every earlier one, and its token field tells a late
// Renew whose lease expired (ErrLeaseExpired) from one that never held the
// ID (ErrNotAssigned); Release sets it to "".
package etcdlease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idalloc/idalloc/workerlease"
)

var _ workerlease.Store = (*Store)(nil)

// Defaults of Options.
const (
	DefaultPrefix      = "/idalloc/workerlease/"
	DefaultDialTimeout = 5 * time.Second
)

// raceTries bounds the lost compare-and-sets one call retries. Each loss
// means another caller's write landed, so a loop cannot spin without
// progress; the bound only turns a pathological pile-up into an error.
const raceTries = 256

// errLostRace: a transaction's comparison failed because another caller
// wrote in between; the call reads again.
var errLostRace = errors.New("lost a race to another etcd client")

// Options tunes a Store. Zero values mean the defaults.
type Options struct {
	// Prefix is put before every key. "" means DefaultPrefix. Stores with
	// different prefixes on one etcd are independent.
	Prefix string
	// DialTimeout is the client's dial timeout in Open. 0 means 5s. Calls
	// are bounded by their context, never by this: with etcd down a call
	// waits until its context ends.
	DialTimeout time.Duration
}

// Store is a workerlease.Store on etcd. It starts no goroutines of its own
// (the etcd client runs its connection's); it is safe for concurrent use.
type Store struct {
	c      *clientv3.Client
	owned  bool
	prefix string

	closeOnce sync.Once
	closeErr  error
}

// New returns a Store on c. It does not own c: Close leaves it open.
func New(c *clientv3.Client, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	return &Store{c: c, prefix: opts.Prefix}
}

// Open connects to the etcd endpoints of dsn, comma-separated URLs
// ("http://10.0.0.1:2379,http://10.0.0.2:2379"; host:port means http), and
// returns a Store that owns the client. It does not wait for etcd to answer:
// an unreachable etcd shows in the first call. Errors: a dsn naming no
// endpoint, and the client's own configuration errors. For TLS or
// authentication, build a clientv3.Client and use New.
func Open(dsn string, opts Options) (*Store, error) {
	var eps []string
	for ep := range strings.SplitSeq(dsn, ",") {
		ep = strings.TrimSpace(ep)
		switch {
		case ep == "":
			continue
		case !strings.Contains(ep, "://") && !strings.HasPrefix(ep, "unix"):
			ep = "http://" + ep
		}
		eps = append(eps, ep)
	}
	if len(eps) == 0 {
		return nil, errors.New("open etcd lease store: the DSN names no endpoint")
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: opts.DialTimeout,
		// The client logs its retries with zap at warn level; a caller
		// sees the outcome as an error instead.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("open etcd lease store: %w", err)
	}
	s := New(c, opts)
	s.owned = true
	return s, nil
}

// Close closes the client if Open made it. It is idempotent. Leases stay as
// they are: release them first, or let etcd expire them.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.owned {
			s.closeErr = s.c.Close()
		}
	})
	return s.closeErr
}

// holdValue is the value of a hold key.
type holdValue struct {
	Token  string `json:"token"`
	Holder string `json:"holder,omitempty"`
	// Lease is the etcd lease the key is attached to, which Renew keeps
	// alive and Release revokes.
	Lease clientv3.LeaseID `json:"lease"`
}

// lastValue is the value of a last key.
type lastValue struct {
	LastTimestampMS int64 `json:"last_timestamp_ms"`
	// Token is the latest holder's; "" once released.
	Token string `json:"token"`
}

// layoutValue is the value of a cluster's layout key.
type layoutValue struct {
	EpochMS    int64 `json:"epoch_ms"`
	WorkerBits int   `json:"worker_bits"`
}

func (s *Store) clusterPrefix(cluster string) string {
	// Escaping keeps one cluster's keys from ever falling under another's
	// prefix ("a" and "a/hold"); the names the Service allows are unchanged.
	return s.prefix + url.PathEscape(cluster) + "/"
}

func (s *Store) holdKey(cluster string, id int64) string {
	return s.clusterPrefix(cluster) + "hold/" + strconv.FormatInt(id, 10)
}

func (s *Store) lastKey(cluster string, id int64) string {
	return s.clusterPrefix(cluster) + "last/" + strconv.FormatInt(id, 10)
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the value types above always marshal
	}
	return string(b)
}

func decode(key string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("etcd key %q holds %q, not a lease record: %w", key, raw, err)
	}
	return nil
}

// ttlSeconds rounds ttl up to etcd's whole seconds: a lease may outlive the
// TTL asked for, never fall short of it.
func ttlSeconds(ttl time.Duration) int64 {
	return int64((ttl + time.Second - 1) / time.Second)
}

// alive reports whether ctx can still carry a clean-up call.
func alive(ctx context.Context) bool { return ctx.Err() == nil }
