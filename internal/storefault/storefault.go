// Package storefault provides, for tests, a real store that can be
// stopped: while Down, every segment call and ping fails as an unreachable
// database's would, and worker leases pass through. Front ends' tests use
// it to reach what an outage looks like from the outside (/health
// degraded or unavailable, resp_code 3, TRYAGAIN) on a real store.
package storefault

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// ErrStopped is every segment call's and ping's error while the store is
// down.
var ErrStopped = errors.New("store stopped by the test")

// Stoppable passes every call on to Store, except that while Down is set
// Fetch, GiveBack, Tags, TagsSince, CreateTag, CreateTags, UpdateTag and
// Ping fail with ErrStopped.
type Stoppable struct {
	store.Store
	Down atomic.Bool
}

// Fetch fails while down, else calls Store.Fetch.
func (s *Stoppable) Fetch(ctx context.Context, tag string, limit, step int64) (segment.Fetched, error) {
	if s.Down.Load() {
		return segment.Fetched{}, ErrStopped
	}
	return s.Store.Fetch(ctx, tag, limit, step)
}

// GiveBack fails while down, else calls Store.GiveBack.
func (s *Stoppable) GiveBack(ctx context.Context, tag string, oldMax, newMax int64) (bool, error) {
	if s.Down.Load() {
		return false, ErrStopped
	}
	return s.Store.GiveBack(ctx, tag, oldMax, newMax)
}

// Tags fails while down, else calls Store.Tags.
func (s *Stoppable) Tags(ctx context.Context) ([]segment.Tag, error) {
	if s.Down.Load() {
		return nil, ErrStopped
	}
	return s.Store.Tags(ctx)
}

// TagsSince fails while down, else calls Store.TagsSince.
func (s *Stoppable) TagsSince(ctx context.Context, since time.Time, after string, limit int) ([]segment.Tag, time.Time, error) {
	if s.Down.Load() {
		return nil, time.Time{}, ErrStopped
	}
	return s.Store.TagsSince(ctx, since, after, limit)
}

// CreateTags fails while down, else calls Store.CreateTags.
func (s *Stoppable) CreateTags(ctx context.Context, tags []segment.Tag) ([]bool, error) {
	if s.Down.Load() {
		return nil, ErrStopped
	}
	return s.Store.CreateTags(ctx, tags)
}

// CreateTag fails while down, else calls Store.CreateTag.
func (s *Stoppable) CreateTag(ctx context.Context, t segment.Tag) error {
	if s.Down.Load() {
		return ErrStopped
	}
	return s.Store.CreateTag(ctx, t)
}

// UpdateTag fails while down, else calls Store.UpdateTag.
func (s *Stoppable) UpdateTag(ctx context.Context, tag string, c segment.TagChange) (segment.Tag, error) {
	if s.Down.Load() {
		return segment.Tag{}, ErrStopped
	}
	return s.Store.UpdateTag(ctx, tag, c)
}

// Ping fails while down, else calls Store.Ping.
func (s *Stoppable) Ping(ctx context.Context) error {
	if s.Down.Load() {
		return ErrStopped
	}
	return s.Store.Ping(ctx)
}
