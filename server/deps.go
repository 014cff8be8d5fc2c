package server

import (
	"context"
	"iter"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// Segments is what the server needs of segment.Allocator. It checks its
// input itself: Next, NextN, Buffered and CreateTag refuse an invalid tag
// (and CreateTag an invalid step, start or description) with an
// *errs.Error, as they answer unknown tags, exhaustion and outages;
// anything that is not an *errs.Error is answered as an internal error.
type Segments interface {
	Next(ctx context.Context, tag string) (int64, error)
	NextN(ctx context.Context, tag string, dst []int64) error
	// NextRanges appends n IDs of tag as ranges to dst; NextRun claims
	// one run of 1 to max of them. A tag whose IDs are not runs of
	// numbers refuses both (segment.ErrNotConsecutive), as an allocator
	// of one region of several refuses ranges; its run holds every
	// Count-th number of Region.
	NextRanges(ctx context.Context, tag string, n int64, dst []segment.Range) ([]segment.Range, error)
	NextRun(ctx context.Context, tag string, max int64) (segment.Range, error)
	// Region is where the allocator serves (docs/api.md §13): its IDs are the
	// numbers ≡ ID (mod Count), Tinyid's remainder and delta.
	Region() segment.Region
	Buffered(tag string) (int64, error)
	TotalBuffered() int64
	// AllStats yields every tag's figures, one at a time, without asking
	// the store: the metrics New makes without Config.Observer read it.
	AllStats() iter.Seq[segment.TagStats]
	// Snapshot is one tag's figures and double buffer, without asking the
	// store; false for a tag this instance does not serve (yet). A page
	// of GET /tags or GET /status reads its rows by it.
	Snapshot(tag string) (segment.TagSnapshot, bool)
	// TagPage is a page of the tags as of the last tag-list reload,
	// without asking the store: GET /tags and GET /status.
	TagPage(q segment.PageQuery) segment.Page
	CreateTag(ctx context.Context, t segment.NewTag) (segment.Tag, error)
	// CreateTags creates many tags (POST /tags with an array): every
	// entry checked first, the first at fault refusing the request
	// naming "tags[i].field"; it returns the tags it created, which an
	// error may come with (tags that existed, a store fault part way).
	CreateTags(ctx context.Context, tags []segment.NewTag) ([]segment.Tag, error)
	// UpdateTag changes a tag's step or description (PATCH /tags): what
	// never changes its numbers. It refuses a change as CreateTag refuses
	// those fields, and answers the row as Tags lists it.
	UpdateTag(ctx context.Context, tag string, c segment.TagChange) (segment.Tag, error)

	// A dated tag's IDs (docs/api.md §11): without prefix and separator they
	// are numbers, which Next and NextN serve; with one they are text,
	// which Next and NextN refuse (segment.ErrTextOnly) and these serve.
	AppendNextText(ctx context.Context, tag string, dst []byte) ([]byte, error)
	NextTextN(ctx context.Context, tag string, buf []int64) (segment.TextBatch, error)
	// Now is the clock dated periods are judged by (segment.Config.Now).
	Now() time.Time
	// DatedFormat is tag's dated format, nil for a tag of another format
	// (or one not served yet), without asking the store.
	DatedFormat(tag string) *dated.Format
}

// Pinger reports whether the store answers; /health asks it in the background.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the server's collaborators. Segments and Store are required; the
// rest are optional.
type Deps struct {
	Segments Segments
	Store    Pinger
	// Snowflake serves /snowflake; nil disables snowflake mode (resp_code 5).
	Snowflake Snowflakes
	// Leases serves POST /workerid*; nil answers them with resp_code 5.
	Leases Leases
	// OwnLease is this instance's own worker lease, for GET /workerid and
	// /status (and the lease metrics New makes without Config.Observer);
	// nil answers GET /workerid with resp_code 5.
	OwnLease OwnLease
	// Guard checks the ID calls' tokens when Config.AllocAuth is on, and
	// is required then; it is not used otherwise.
	Guard Guard
	// Tokens serves /tokens and /audit and records the admin changes made
	// here in the audit log; nil answers those routes as unknown and
	// records nothing.
	Tokens Tokens
}
