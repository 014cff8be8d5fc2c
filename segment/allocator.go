// Package segment provides a Leaf-style double-buffered ID allocator: per tag
// it serves IDs from a reserved range in memory and fetches the next range in
// the background once 10% of the current one is used, so the store is never
// on the request path while buffered IDs remain.
package segment

import (
	"context"
	"time"
)

// Config tunes an Allocator. Zero values mean the documented defaults.
type Config struct {
	MaxStep      int64         // cap of the adaptive step; 0 means 1,000,000
	TagRefresh   time.Duration // how often the tag list is reloaded; 0 means 10s
	WaitTimeout  time.Duration // how long a request waits for a fetch when nothing is buffered; 0 means 1s
	FetchTimeout time.Duration // bound of one store call; 0 means 5s
	Now          func() time.Time
	Observer     Observer // optional: metrics hooks
}

// Observer receives events for metrics. Methods must be cheap and safe for
// concurrent use; they are never called on the per-ID path.
type Observer interface {
	Fetched(tag string, took time.Duration, err error)
	GaveBack(tag string, n int64) // unused IDs returned to the store on Close
	Wasted(tag string, n int64)   // unused IDs that could not be returned
}

// TagStats is a point-in-time view of one tag in this allocator.
type TagStats struct {
	AppTag   string
	Buffered int64 // IDs left in memory (current + prefetched segment)
	Step     int64 // current adaptive step (0 before the first fetch)
	Issued   int64 // IDs handed out by this allocator since it started
}

// Allocator hands out IDs per tag. Goroutines it starts: the tag refresher
// (one) and at most one fetch per tag at a time; Close stops and waits for all.
type Allocator struct{}

// New loads the tag list and starts the refresher.
func New(ctx context.Context, store Store, cfg Config) (*Allocator, error) { panic("todo") }

// Next returns the next ID of tag.
func (a *Allocator) Next(ctx context.Context, tag string) (int64, error) { panic("todo") }

// NextN fills dst with len(dst) strictly increasing IDs of tag.
func (a *Allocator) NextN(ctx context.Context, tag string, dst []int64) error { panic("todo") }

// Buffered returns the IDs of tag buffered in memory.
func (a *Allocator) Buffered(tag string) (int64, error) { panic("todo") }

// TotalBuffered returns the IDs buffered over all tags.
func (a *Allocator) TotalBuffered() int64 { panic("todo") }

// Stats reports every known tag.
func (a *Allocator) Stats() []TagStats { panic("todo") }

// Tags lists the store's rows.
func (a *Allocator) Tags(ctx context.Context) ([]Tag, error) { panic("todo") }

// CreateTag adds a tag to the store and makes it servable at once.
func (a *Allocator) CreateTag(ctx context.Context, t Tag) error { panic("todo") }

// Close stops issuing, waits for background work and gives back unused IDs.
func (a *Allocator) Close(ctx context.Context) error { panic("todo") }

// ValidTag reports whether s matches ^[A-Za-z0-9_.:-]{1,64}$.
func ValidTag(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
