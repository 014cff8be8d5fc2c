package access_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idalloc/idalloc/access"
)

// memStore is an access.Store in memory, as the SQL stores behave, whose
// calls fail while down is set: the domain's tests need no database.
type memStore struct {
	mu     sync.Mutex
	toks   []access.StoredToken
	log    []access.Entry
	down   bool
	now    time.Time
	nextID int64
}

var errDown = errors.New("store down")

func newMemStore() *memStore { return &memStore{now: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)} }

func (m *memStore) setDown(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

func (m *memStore) CreateToken(_ context.Context, t access.StoredToken, e access.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	for _, o := range m.toks {
		if o.Name == t.Name || o.Hash == t.Hash {
			return access.ErrTokenExists
		}
	}
	t.CreatedAt = m.now
	m.toks = append(m.toks, t)
	slices.SortFunc(m.toks, func(a, b access.StoredToken) int { return strings.Compare(a.Name, b.Name) })
	m.append(e)
	return nil
}

func (m *memStore) DeleteToken(_ context.Context, name string, e access.Entry) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return false, errDown
	}
	i := slices.IndexFunc(m.toks, func(t access.StoredToken) bool { return t.Name == name })
	if i < 0 {
		return false, nil
	}
	m.toks = slices.Delete(m.toks, i, i+1)
	m.append(e)
	return true, nil
}

func (m *memStore) Tokens(context.Context) ([]access.StoredToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errDown
	}
	return slices.Clone(m.toks), nil
}

func (m *memStore) Audit(_ context.Context, e access.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	m.append(e)
	return nil
}

// append stores e as the SQL stores do: their ID and clock. Under mu.
func (m *memStore) append(e access.Entry) {
	m.nextID++
	e.ID, e.At = m.nextID, m.now
	m.log = append(m.log, e)
}

func (m *memStore) AuditLog(_ context.Context, limit int) ([]access.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errDown
	}
	out := slices.Clone(m.log)
	slices.Reverse(out)
	return out[:min(limit, len(out))], nil
}
