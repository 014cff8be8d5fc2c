package segment_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// fakeStore is an in-memory segment.Store with hooks for failure injection.
// Real databases are exercised through storeDrivers; this one exists for the
// faults and counts a real database cannot be made to produce on demand.
type fakeStore struct {
	mu      sync.Mutex
	rows    map[string]*segment.Tag
	failing atomic.Bool // every call fails while set
	// failAfter, when above 0, makes every fetch after that many fail.
	failAfter atomic.Int64
	fetches   atomic.Int64 // fetches started
	returned  atomic.Int64 // fetches that returned
	lists     atomic.Int64
	updates   atomic.Int64  // UpdateTag calls
	delay     time.Duration // added to each Fetch
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

func (f *fakeStore) Fetch(ctx context.Context, tag string, step int64) (segment.Fetched, error) {
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
	if r.MaxID > math.MaxInt64-step {
		return segment.Fetched{}, segment.ErrExhausted
	}
	r.MaxID += step
	return segment.Fetched{MaxID: r.MaxID, Size: step, Step: r.Step}, nil
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
	r.MaxID = newMax
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

func (f *fakeStore) CreateTag(_ context.Context, t segment.Tag) error {
	if f.failing.Load() {
		return errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.rows[t.AppTag]; ok {
		return segment.ErrTagExists
	}
	t.MaxID = t.Start - 1
	f.rows[t.AppTag] = &t
	return nil
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
