package workerlease

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"
)

var _ Store = (*MemoryStore)(nil)

// MemoryStore is a Store kept in memory, with the semantics documented on
// Store and expiry judged by its own injected clock, which plays the
// database's. It serves tests and single-process use; it is safe for
// concurrent use. Unlike the module's other stores it records no snowflake
// layouts (snowflake/leased's LayoutRecorder): their holders are processes
// that may be configured apart, and one process has one layout.
type MemoryStore struct {
	now func() time.Time

	mu   sync.Mutex
	rows map[memKey]*memRow
	// genesis: the store began empty and has not forgotten everything
	// since (Forget ends it, as deleting a SQL store's rows deletes its
	// genesis row), so an ID with no row at or above created was never
	// leased (Lease.NoHistory false).
	genesis bool
	// created is, per cluster, one above the highest worker ID that ever
	// had a row: a row missing below it was lost (ForgetCluster,
	// ForgetWorker), and the ID's next grant has no history.
	created map[string]int64
}

type memKey struct {
	cluster  string
	workerID int64
}

// memRow mirrors a worker_leases row. A released row keeps its
// lastTimestampMS: the next holder must still start after it.
type memRow struct {
	token           string
	holder          string
	expiresAt       time.Time
	released        bool
	lastTimestampMS int64
}

// NewMemoryStore returns an empty MemoryStore whose clock is now (nil means
// time.Now). It knows it began empty: until Forget, an ID it has no record
// of was never leased, and its grants have history.
func NewMemoryStore(now func() time.Time) *MemoryStore {
	if now == nil {
		now = time.Now
	}
	return &MemoryStore{now: now, rows: make(map[memKey]*memRow), genesis: true, created: make(map[string]int64)}
}

// Acquire implements Store.
func (m *MemoryStore) Acquire(ctx context.Context, req AcquireRequest) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	pick := int64(-1)
	for id := int64(0); id <= req.MaxWorkerID; id++ {
		r := m.rows[memKey{req.Cluster, id}]
		if r != nil && r.live(now) {
			continue
		}
		if r == nil || r.lastTimestampMS <= req.NowMS {
			pick = id
			break
		}
		if pick < 0 {
			pick = id // free but reserved ahead of the caller's clock: last resort
		}
	}
	if pick < 0 {
		return Lease{}, ErrNoWorkerID
	}
	k := memKey{req.Cluster, pick}
	r := m.rows[k]
	fresh := r == nil
	if fresh {
		r = &memRow{}
		m.rows[k] = r
	}
	r.token, r.holder, r.released = req.Token, req.Holder, false
	r.expiresAt = now.Add(req.TTL).UTC()
	l := r.lease(k)
	if fresh {
		l.NoHistory = !m.genesis || pick < m.created[req.Cluster]
		m.created[req.Cluster] = max(m.created[req.Cluster], pick+1)
	}
	return l, nil
}

// Renew implements Store.
func (m *MemoryStore) Renew(ctx context.Context, cluster string, workerID int64, token string, ttl time.Duration, lastTimestampMS int64) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{cluster, workerID}
	r, err := m.held(k, token)
	if errors.Is(err, ErrLeaseExpired) {
		r.lastTimestampMS = max(r.lastTimestampMS, lastTimestampMS)
	}
	if err != nil {
		return Lease{}, err
	}
	r.expiresAt = m.now().Add(ttl).UTC()
	r.lastTimestampMS = max(r.lastTimestampMS, lastTimestampMS)
	return r.lease(k), nil
}

// Release implements Store.
func (m *MemoryStore) Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.held(memKey{cluster, workerID}, token)
	if errors.Is(err, ErrLeaseExpired) {
		r.lastTimestampMS = max(r.lastTimestampMS, lastTimestampMS)
	}
	if err != nil {
		return err
	}
	r.released = true
	r.lastTimestampMS = max(r.lastTimestampMS, lastTimestampMS)
	return nil
}

// Forget drops every lease, as a store restarted without
// persistence would: for tests of what holders do when their store forgets.
func (m *MemoryStore) Forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.rows)
	m.genesis = false
}

// ForgetCluster drops every lease of cluster, as deleting its rows would;
// the next grant of each of its worker IDs that had one has no history.
func (m *MemoryStore) ForgetCluster(cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.rows, func(k memKey, _ *memRow) bool { return k.cluster == cluster })
}

// ForgetWorker drops the lease of one worker ID of cluster, as deleting its
// row would; its next grant has no history.
func (m *MemoryStore) ForgetWorker(cluster string, workerID int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rows, memKey{cluster, workerID})
}

// held is the compare-and-set guard shared by Renew and Release.
func (m *MemoryStore) held(k memKey, token string) (*memRow, error) {
	r := m.rows[k]
	switch {
	case r == nil || r.released:
		return nil, ErrNotAssigned
	case r.token != token:
		return nil, ErrTokenMismatch
	case !r.live(m.now()):
		// Refused, but the holder may have issued IDs up to the timestamp it
		// reports: the caller records it anyway (see keepHistory in store).
		return r, ErrLeaseExpired
	}
	return r, nil
}

// live mirrors the SQL stores' "expires_at > NOW(6)".
func (r *memRow) live(now time.Time) bool {
	return !r.released && r.expiresAt.After(now)
}

func (r *memRow) lease(k memKey) Lease {
	return Lease{
		Cluster:         k.cluster,
		WorkerID:        k.workerID,
		Token:           r.token,
		Holder:          r.holder,
		ExpiresAt:       r.expiresAt,
		LastTimestampMS: r.lastTimestampMS,
	}
}
