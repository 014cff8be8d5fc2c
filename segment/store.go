package segment

import (
	"context"
	"time"
)

// Store is the persistence the allocator needs: one row per tag holding the
// highest ID ever handed to any instance. Implementations live in package store.
type Store interface {
	// Fetch reserves the next range for tag: it reads max_id and the row's
	// step, then moves max_id from the value read to min(max_id+delta,
	// limit) by a compare-and-set whose success alone proves the range
	// (never a read-back after the write), retrying at once when another
	// writer won. delta is step when step > 0, else the row's own step;
	// limit is the last number the tag's format has an ID for, so max_id
	// never passes it and Size is below delta at the tag's end. The
	// returned range is (MaxID-Size, MaxID]; it must only be returned once
	// that write committed. Errors: ErrUnknownTag when there is no row,
	// ErrExhausted when max_id is at limit or past it (nothing is
	// written); anything else is a store fault.
	Fetch(ctx context.Context, tag string, limit, step int64) (Fetched, error)

	// GiveBack sets max_id to newMax only if it still equals oldMax
	// (compare-and-set), returning whether it did. It hands unused IDs back on
	// a graceful stop when no other instance advanced the row meanwhile.
	GiveBack(ctx context.Context, tag string, oldMax, newMax int64) (bool, error)

	// Tags lists every row, with its Format, Length, (scrambled)
	// FormatKey and Start; a row from before number formats is
	// sequential, and one whose start the store does not know has Start 0.
	Tags(ctx context.Context) ([]Tag, error)

	// TagsSince lists, as Tags does and in AppTag order (bytewise), the
	// rows whose update_time is at or after since (every row when since
	// is zero) and whose AppTag sorts after after (every one when after
	// is ""), at most limit of them (every one when limit is 0); and
	// asOf, the store's clock read just before it looked. Every write of
	// a row sets its update_time to the store's clock (Fetch, GiveBack,
	// CreateTag, CreateTags, UpdateTag), so the rows changed after asOf
	// are in the next answer from asOf, but for a write that commits
	// late: its update_time is the clock when its statement ran, which
	// may be before asOf. The Allocator asks from asOf less a margin for
	// those (changeOverlap), and reads every row now and then.
	TagsSince(ctx context.Context, since time.Time, after string, limit int) (rows []Tag, asOf time.Time, err error)

	// CreateTags inserts rows as CreateTag does, in chunks of many rows,
	// each chunk one transaction. A tag that exists is not written, and
	// is no error: created[i] reports whether tags[i] was written. Every
	// row is checked first as CreateTag checks one, and no tag may be
	// given twice: the first row at fault refuses the whole call before
	// anything is written. On any other error, created covers the chunks
	// committed before it (from tags[0]), which stay written.
	CreateTags(ctx context.Context, tags []Tag) (created []bool, err error)

	// CreateTag inserts a row with max_id = Start-1, start = Start and
	// t's Format, Length and FormatKey. ErrTagExists when the row is
	// there already; ErrFormatUnsupported (in words that say how to
	// upgrade the store) when it cannot keep a fixed_length or scrambled
	// tag.
	CreateTag(ctx context.Context, t Tag) error

	// UpdateTag sets the step or the description of tag's row, or both,
	// as c gives them (nil leaves one as it is), in one statement that
	// touches nothing else of the row but update_time: never max_id, so
	// a range being fetched meanwhile stays as reserved. It returns the
	// row as Tags lists it, read after the change. Errors: CheckRow's for
	// a step below 1 or a description longer than the column;
	// ErrNoChange; ErrUnknownTag when there is no row; anything else is
	// a store fault.
	UpdateTag(ctx context.Context, tag string, c TagChange) (Tag, error)

	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
}

// Fetched is the outcome of one Store.Fetch.
type Fetched struct {
	MaxID int64 // max_id after the update
	Size  int64 // how much the update added: the range is (MaxID-Size, MaxID]
	Step  int64 // the row's configured step (the adaptive step's floor)
	// Now is the store's clock at the fetch, read in the same round trip;
	// set by PeriodStore.FetchPeriod, zero from Fetch.
	Now time.Time
}

// MaxDescription is the width of segments.description: the store and the
// HTTP layer both refuse longer descriptions.
const MaxDescription = 256

// Tag is one row of the segments table.
type Tag struct {
	AppTag string
	MaxID  int64
	Step   int64

	// Start is the tag's first ID: given to Store.CreateTag (0 means 1;
	// the Allocator always gives it, resolved by CheckNewTag) and read
	// back by Tags as it was stored; 0 from Tags means unknown (a row made before the store
	// recorded starts). For a scrambled tag it is 1, the first number of
	// the sequence the permutation maps.
	Start int64

	Description string
	UpdateTime  time.Time

	// Format is how the tag's numbers are served (docs/api.md §7); empty means
	// FormatSequential, as rows from before formats existed are.
	Format Format
	// Length is the digit count of fixed_length and scrambled IDs; 0 for
	// sequential.
	Length int
	// FormatKey is the secret key of a scrambled tag's permutation
	// (scramble.KeySize bytes, made at create). It is store-only: no API,
	// log or metric ever shows it, since it would let anyone undo the
	// scrambling. Allocator.Tags never carries it; json:"-" keeps it out
	// of any Tag marshalled by mistake.
	FormatKey []byte `json:"-"`
	// FormatSpec is a dated tag's settings beyond Length and Start
	// (period, time zone, prefix, separator), encoded by package
	// segment/dated; empty for the other formats. The store keeps and
	// returns it as given, unread.
	FormatSpec string
}
