package segment

import (
	"context"
	"strconv"
)

// Ranges hand a caller many IDs as a few runs of consecutive numbers
// (docs/api.md §12): what a client that serves IDs in its own process, such as
// Tinyid's or ours, needs, at the cost of a few bytes however many IDs.
// Only a tag whose IDs are its sequence numbers has runs: sequential and
// fixed_length tags. A scrambled tag's IDs are a permutation of them and
// a dated tag's are stamped per period, so both refuse.

// Range is the IDs First, First+1, …, Last.
type Range struct{ First, Last int64 }

// Len is how many IDs r holds.
func (r Range) Len() int64 { return r.Last - r.First + 1 }

// DefaultMaxRange is the largest count of one ranges request when
// max_range is not set, and MaxMaxRange the largest max_range may be: a
// range request of n may reserve n IDs at once, which a client that stops
// early never issues.
const (
	DefaultMaxRange = 1_000_000
	MaxMaxRange     = 100_000_000
)

// ErrNotConsecutive: a tag whose IDs are not consecutive numbers (scrambled,
// dated) asked for as ranges. Nothing is claimed.
var ErrNotConsecutive = invalid("as", "this tag's IDs are not runs of consecutive numbers "+
	"(a scrambled or dated tag): ask for a list (count without as=ranges)", nil)

// errRegionRanges: ranges asked of an instance of one region of several,
// whose IDs are every region.count-th number. It is ErrNotConsecutive.
var errRegionRanges = invalid("as", "this instance serves one region of several (region.count above 1), "+
	"whose IDs are every region.count-th number, not runs of consecutive numbers: ask for a list "+
	"(count without as=ranges)", ErrNotConsecutive)

// NewRangeLimit is the rule of a ranges request's count, an integer from 1
// to max (DefaultMaxRange when max < 1), refused in words that name
// max_range. Its error is a case of ErrInvalidCount.
func NewRangeLimit(max int) CountLimit {
	if max < 1 {
		max = DefaultMaxRange
	}
	return CountLimit{max: max, err: invalid("count",
		"must be an integer from 1 to "+strconv.Itoa(max)+" (max_range) with as=ranges", ErrInvalidCount)}
}

// NextRanges appends to dst n IDs of tag as ranges, strictly increasing and
// disjoint, adjacent runs joined, and returns the extended slice. It claims
// as NextN does: whole or not at all. On error it returns dst unchanged.
// Errors as NextN's, and ErrNotConsecutive before anything is claimed,
// also for every tag of an allocator of one region of several.
func (a *Allocator) NextRanges(ctx context.Context, tag string, n int64, dst []Range) ([]Range, error) {
	b, err := a.consecutive(ctx, tag)
	if err == nil && !a.region.Single() {
		err = errRegionRanges
	}
	if err != nil {
		return dst, err
	}
	out := dst
	err = b.claimRuns(ctx, n, func(first, k int64) {
		if j := len(out); j > len(dst) && out[j-1].Last+1 == first {
			out[j-1].Last = first + k - 1
		} else {
			out = append(out, Range{First: first, Last: first + k - 1})
		}
	})
	if err != nil {
		return dst, err
	}
	return out, nil
}

// NextRun claims one run of consecutive IDs of tag, from 1 to max of them:
// as many as the current segment holds, up to max. It is for a caller that
// needs its IDs in one piece (Tinyid's segment), and never waits while
// the current segment has any left. In one region of several
// (Config.Region) the run's IDs are First, First+Count, …, Last, every
// Count-th number (Tinyid's delta and remainder are the Region's Count
// and ID): Len then counts the numbers from First to Last, not the IDs.
// Errors as Next's, and ErrNotConsecutive before anything is claimed.
func (a *Allocator) NextRun(ctx context.Context, tag string, max int64) (Range, error) {
	b, err := a.consecutive(ctx, tag)
	if err != nil {
		return Range{}, err
	}
	if max < 1 {
		return Range{}, ErrInvalidCount
	}
	for {
		s := b.cur.Load()
		v := s.cursor.Load()
		if v <= s.end {
			k := min(max, s.end-v+1)
			if !s.cursor.CompareAndSwap(v, v+k) {
				continue
			}
			if v <= s.prefetchAt && s.prefetchAt < v+k {
				b.prefetch()
			}
			return Range{First: a.region.number(v), Last: a.region.number(v + k - 1)}, nil
		}
		if err := b.advance(ctx, s); err != nil {
			return Range{}, err
		}
	}
}

// consecutive finds tag's buffer, refusing a tag whose IDs are not its
// sequence numbers.
func (a *Allocator) consecutive(ctx context.Context, tag string) (*buffer, error) {
	b, err := a.buffer(ctx, tag)
	if err != nil {
		return nil, err
	}
	if b.perm != nil || b.dated != nil {
		return nil, ErrNotConsecutive
	}
	return b, nil
}
