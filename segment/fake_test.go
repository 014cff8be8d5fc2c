package segment_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// fakeStore is an in-memory segment.Store with hooks for failure injection.
// Real databases are exercised through storeDrivers; this one exists for the
// faults and counts a real database cannot be made to produce on demand.
type fakeStore struct {
	mu    sync.Mutex
	rows  map[string]*segment.Tag
	names []string // the keys of rows, sorted, for TagsSince; nil when rows changed since
	// clock is the store's clock, which stamps every write and TagsSince's
	// asOf; nil means time.Now.
	clock   func() time.Time
	failing atomic.Bool // every call fails while set
	// failAfter, when above 0, makes every fetch after that many fail.
	failAfter atomic.Int64
	fetches   atomic.Int64  // fetches started
	returned  atomic.Int64  // fetches that returned
	lists     atomic.Int64  // TagsSince calls
	listed    atomic.Int64  // rows TagsSince answered
	updates   atomic.Int64  // UpdateTag calls
	delay     time.Duration // added to each Fetch
	// createFailAt, when above 0, makes CreateTags fail after writing the
	// tags before that index, as a store failing at a chunk does.
	createFailAt int
}

var errDown = &downError{}

type downError struct{}

func (*downError) Error() string { return "store down" }

func newFakeStore(tags ...segment.Tag) *fakeStore {
	f := &fakeStore{rows: map[string]*segment.Tag{}}
	for _, t := range tags {
		t := t
		f.rows[t.AppTag] = &t
	}
	return f
}

func (f *fakeStore) Fetch(ctx context.Context, tag string, limit, step int64) (segment.Fetched, error) {
	n := f.fetches.Add(1)
	defer f.returned.Add(1)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return segment.Fetched{}, ctx.Err()
		}
	}
	if fa := f.failAfter.Load(); f.failing.Load() || (fa > 0 && n > fa) {
		return segment.Fetched{}, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rows[tag]
	if r == nil {
		return segment.Fetched{}, segment.ErrUnknownTag
	}
	if step <= 0 {
		step = r.Step
	}
	if r.MaxID >= limit {
		return segment.Fetched{}, segment.ErrExhausted
	}
	old := r.MaxID
	r.MaxID = min(limit, old+min(step, limit-old))
	r.UpdateTime = f.now()
	return segment.Fetched{MaxID: r.MaxID, Size: r.MaxID - old, Step: r.Step}, nil
}

func (f *fakeStore) GiveBack(_ context.Context, tag string, oldMax, newMax int64) (bool, error) {
	if f.failing.Load() {
		return false, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rows[tag]
	if r == nil || r.MaxID != oldMax {
		return false, nil
	}
	r.MaxID, r.UpdateTime = newMax, f.now()
	return true, nil
}

func (f *fakeStore) Tags(context.Context) ([]segment.Tag, error) {
	f.lists.Add(1)
	if f.failing.Load() {
		return nil, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]segment.Tag, 0, len(f.rows))
	for _, r := range f.rows {
		out = append(out, *r)
	}
	return out, nil
}

// TagsSince answers as the stores do: the rows written at or after since
// (every write stamps its row with the store's clock), after after, in
// AppTag order, at most limit.
func (f *fakeStore) TagsSince(_ context.Context, since time.Time, after string, limit int) ([]segment.Tag, time.Time, error) {
	f.lists.Add(1)
	if f.failing.Load() {
		return nil, time.Time{}, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	asOf := f.now()
	if f.names == nil {
		f.names = slices.Sorted(maps.Keys(f.rows))
	}
	i, _ := slices.BinarySearch(f.names, after)
	var out []segment.Tag
	for _, name := range f.names[i:] {
		if r := f.rows[name]; name > after && !r.UpdateTime.Before(since) {
			out = append(out, *r)
			if len(out) == limit {
				break
			}
		}
	}
	f.listed.Add(int64(len(out)))
	return out, asOf, nil
}

func (f *fakeStore) now() time.Time {
	if f.clock != nil {
		return f.clock()
	}
	return time.Now()
}

// add puts row in the store as it is, as an operator's INSERT would;
// f.mu is held.
func (f *fakeStore) addLocked(row segment.Tag) {
	f.rows[row.AppTag] = &row
	f.names = nil
}

// edit changes tag's row as an operator's statement would, which may
// leave its update_time as it was, or delete it (fn returns false).
func (f *fakeStore) edit(tag string, fn func(r *segment.Tag) (keep bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !fn(f.rows[tag]) {
		delete(f.rows, tag)
		f.names = nil
	}
}

func (f *fakeStore) CreateTag(_ context.Context, t segment.Tag) error {
	if f.failing.Load() {
		return errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.rows[t.AppTag]; ok {
		return segment.ErrTagExists
	}
	t.MaxID, t.UpdateTime = t.Start-1, f.now()
	f.addLocked(t)
	return nil
}

// CreateTags creates the tags that do not exist, all at once.
func (f *fakeStore) CreateTags(_ context.Context, tags []segment.Tag) ([]bool, error) {
	if f.failing.Load() {
		return nil, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	created := make([]bool, len(tags))
	for i, t := range tags {
		if i == f.createFailAt && i > 0 {
			return created[:i], errDown
		}
		if _, ok := f.rows[t.AppTag]; !ok {
			t.MaxID, t.UpdateTime = t.Start-1, f.now()
			f.addLocked(t)
			created[i] = true
		}
	}
	return created, nil
}

func (f *fakeStore) UpdateTag(_ context.Context, tag string, c segment.TagChange) (segment.Tag, error) {
	f.updates.Add(1)
	if f.failing.Load() {
		return segment.Tag{}, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rows[tag]
	if r == nil {
		return segment.Tag{}, segment.ErrUnknownTag
	}
	if c.Step != nil {
		r.Step = *c.Step
	}
	if c.Description != nil {
		r.Description = *c.Description
	}
	r.UpdateTime = f.now()
	return *r, nil
}

func (f *fakeStore) Ping(context.Context) error {
	if f.failing.Load() {
		return errDown
	}
	return nil
}

func (f *fakeStore) maxID(tag string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows[tag].MaxID
}
