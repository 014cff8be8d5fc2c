package workerlease

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/naming"
)

// Defaults of Config.
const (
	DefaultCluster     = "default"
	DefaultMaxWorkerID = 1023 // 10 worker bits, the default snowflake layout
	DefaultTTL         = 30 * time.Second
)

// tokenBytes is the entropy of a lease token: 128 bits, so a token cannot be
// guessed and two holders never draw the same one.
const tokenBytes = 16

// tokenLen is the length of a token: tokenBytes in unpadded base64url.
const tokenLen = 22

// Config tunes a Service. Zero values mean the documented defaults.
type Config struct {
	// Cluster is used when a call names none. "" means "default"; otherwise
	// it must match ^[A-Za-z0-9_.:-]{1,64}$.
	Cluster string
	// MaxWorkerID is the highest worker ID granted (2^worker_bits − 1).
	// 0 means 1023; negative is an error.
	MaxWorkerID int64
	// TTL is the lease time to live. 0 means 30s; negative is an error.
	TTL time.Duration
	// Holder names this process in the leases it takes (host, pid), for
	// operators reading the worker_leases table.
	Holder string
	// Rand is the token entropy; it must be safe for concurrent use.
	// nil means crypto/rand.
	Rand io.Reader
	// Now is the clock whose Unix milliseconds Acquire reports to the store,
	// so that it can prefer IDs no holder has reserved beyond this clock.
	// nil means time.Now.
	Now func() time.Time
}

// Service grants, renews and releases worker-ID leases on a Store, validating
// every input first so that nothing malformed reaches the store: it holds
// the one set of lease-input rules (cluster, worker ID range, token form,
// TTL, timestamp, holder width), and the stores trust what it passes them
// (Store). Its errors
// are *errs.Error values whose messages front ends send as they are. It is the API
// behind POST /workerid* and the Keeper's own lease. It starts no goroutines
// and is safe for concurrent use.
type Service struct {
	store       Store
	cluster     string
	maxWorkerID int64
	ttl         time.Duration
	holder      string
	rand        io.Reader
	now         func() time.Time
	// errWorkerID refuses a worker ID out of range in words that name it.
	errWorkerID *errs.Error
}

// NewService returns a Service on store. Errors (all ErrInvalidConfig): a
// nil store, a Cluster that is not valid (also ErrInvalidCluster), a negative
// MaxWorkerID (also ErrInvalidWorkerID), or a TTL that is negative or below
// 1ms.
func NewService(store Store, cfg Config) (*Service, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil Store", ErrInvalidConfig)
	}
	if cfg.Cluster == "" {
		cfg.Cluster = DefaultCluster
	}
	if !ValidCluster(cfg.Cluster) {
		return nil, fmt.Errorf("%w: Cluster %q: %w", ErrInvalidConfig, cfg.Cluster, ErrInvalidCluster)
	}
	switch {
	case cfg.MaxWorkerID < 0:
		return nil, fmt.Errorf("%w: MaxWorkerID %d: %w", ErrInvalidConfig, cfg.MaxWorkerID, ErrInvalidWorkerID)
	case cfg.MaxWorkerID == 0:
		cfg.MaxWorkerID = DefaultMaxWorkerID
	}
	switch {
	case cfg.TTL < 0:
		return nil, fmt.Errorf("%w: TTL %v is negative", ErrInvalidConfig, cfg.TTL)
	case cfg.TTL == 0:
		cfg.TTL = DefaultTTL
	case cfg.TTL < time.Millisecond:
		// The stores count TTLs in milliseconds (etcd in seconds).
		return nil, fmt.Errorf("%w: TTL %v is below 1ms", ErrInvalidConfig, cfg.TTL)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{
		store:       store,
		cluster:     cfg.Cluster,
		maxWorkerID: cfg.MaxWorkerID,
		ttl:         cfg.TTL,
		holder:      cfg.Holder,
		rand:        cfg.Rand,
		now:         cfg.Now,
		errWorkerID: invalid("worker_id", fmt.Sprintf("must be from 0 to %d", cfg.MaxWorkerID), ErrInvalidWorkerID),
	}, nil
}

// TTL returns the lease time to live.
func (s *Service) TTL() time.Duration { return s.ttl }

// MaxWorkerID returns the highest worker ID the Service grants.
func (s *Service) MaxWorkerID() int64 { return s.maxWorkerID }

// Cluster returns the cluster used when a call names none.
func (s *Service) Cluster() string { return s.cluster }

// Acquire grants a free worker ID of cluster ("" means the default) under a
// new random token. holder "" means Config.Holder. The Lease's
// LastTimestampMS is the highest timestamp any earlier holder of the ID
// reserved: the new holder must issue only above it. Its NoHistory says the
// store had no record of the ID (Store.Acquire). A holder longer than
// MaxHolderLen characters is cut to it. Errors:
// ErrInvalidCluster, ErrNoWorkerID, or ErrUnavailable wrapping any other
// store failure.
func (s *Service) Acquire(ctx context.Context, cluster, holder string) (Lease, error) {
	return s.acquire(ctx, cluster, holder, s.now())
}

// acquire lets the Keeper report its own clock, which is the one its
// generator will run on.
func (s *Service) acquire(ctx context.Context, cluster, holder string, now time.Time) (Lease, error) {
	cluster, err := s.resolveCluster(cluster)
	if err != nil {
		return Lease{}, err
	}
	if holder == "" {
		holder = s.holder
	}
	holder = cutHolder(holder)
	token, err := s.newToken()
	if err != nil {
		return Lease{}, err
	}
	// The store's errors say which worker ID and cluster already.
	l, err := s.store.Acquire(ctx, AcquireRequest{
		Cluster:     cluster,
		MaxWorkerID: s.maxWorkerID,
		Token:       token,
		Holder:      holder,
		TTL:         s.ttl,
		NowMS:       now.UnixMilli(),
	})
	return l, storeErr(err)
}

// storeErr passes the lease outcomes through and marks any other store
// failure ErrUnavailable, so that callers can tell "refused" from "retry".
func storeErr(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrNoWorkerID), errors.Is(err, ErrNotAssigned),
		errors.Is(err, ErrTokenMismatch), errors.Is(err, ErrLeaseExpired):
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// Renew extends the lease token holds on workerID to TTL from now (by the
// store's clock) and raises the worker ID's last_timestamp_ms to
// lastTimestampMS if that is larger; 0 reports nothing. cluster "" means the
// default. Errors, checked in this order: ErrInvalidCluster,
// ErrInvalidWorkerID (naming the range), ErrInvalidToken,
// ErrInvalidTimestamp; then ErrNotAssigned, ErrTokenMismatch,
// ErrLeaseExpired, or ErrUnavailable wrapping any other store failure.
func (s *Service) Renew(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) (Lease, error) {
	cluster, err := s.validate(cluster, workerID, token, lastTimestampMS)
	if err != nil {
		return Lease{}, err
	}
	l, err := s.store.Renew(ctx, cluster, workerID, token, s.ttl, lastTimestampMS)
	return l, storeErr(err)
}

// Release frees workerID if token still holds it, after raising its
// last_timestamp_ms as Renew does. Errors as Renew.
func (s *Service) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	cluster, err := s.validate(cluster, workerID, token, lastTimestampMS)
	if err != nil {
		return err
	}
	return storeErr(s.store.Release(ctx, cluster, workerID, token, lastTimestampMS))
}

// maxTimestampAhead bounds a reported last_timestamp_ms, beyond the TTL.
const maxTimestampAhead = 24 * time.Hour

func (s *Service) validate(cluster string, workerID int64, token string, lastTimestampMS int64) (string, error) {
	cluster, err := s.resolveCluster(cluster)
	if err != nil {
		return "", err
	}
	if workerID < 0 || workerID > s.maxWorkerID {
		return "", s.errWorkerID
	}
	if !ValidToken(token) {
		return "", ErrInvalidToken
	}
	// A value far ahead (microseconds sent for milliseconds, say) would
	// push every later holder's floor past what its clock will reach for
	// years: that worker ID would answer "try later" for good. A holder
	// reserves at most its TTL ahead; a day more covers clock skew.
	if lastTimestampMS < 0 || lastTimestampMS > s.now().Add(s.ttl+maxTimestampAhead).UnixMilli() {
		return "", ErrInvalidTimestamp
	}
	return cluster, nil
}

func (s *Service) resolveCluster(cluster string) (string, error) {
	if cluster == "" {
		return s.cluster, nil
	}
	if !ValidCluster(cluster) {
		return "", ErrInvalidCluster
	}
	return cluster, nil
}

func (s *Service) newToken() (string, error) {
	var b [tokenBytes]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("generate lease token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ValidToken reports whether tok has the form of a lease token: 22 base64url
// characters. It does not insist on the canonical encoding of 16 bytes, so a
// well-formed token that was never issued reaches the store and is answered
// ErrTokenMismatch or ErrNotAssigned, as the API contract asks.
func ValidToken(tok string) bool {
	if len(tok) != tokenLen {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; !isAlnum(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// ValidCluster reports whether c is a valid cluster name. It is the one
// name rule (naming.Valid), ^[A-Za-z0-9_.:-]{1,64}$, so a cluster name is
// as safe in SQL, logs and labels as a tag.
func ValidCluster(c string) bool { return naming.Valid(c) }

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
