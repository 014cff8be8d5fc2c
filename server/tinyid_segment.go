package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// Tinyid's segment routes, nextSegmentId and nextSegmentIdSimple
// (docs/api.md §12), which Tinyid's Java client takes segments from and
// counts through itself: it reads currentId, loadingId, maxId, delta and
// remainder (the Simple route's text in that order), issues the numbers
// in (currentId, maxId] that are ≡ remainder (mod delta), and loads the
// next segment from loadingId on. An error status or an empty body is no
// segment to it.
//
// A segment is one run of the tag (NextRun: what is left of its current
// segment on this instance, at most max_range): First to Last is
// currentId First − 1 and maxId Last, loadingId 20 % of the way, as
// Tinyid computes it; delta and remainder are the region's count and ID
// (docs/api.md §13), 1 and 0 without regions. Errors as nextId's
// (tinyid.go); a tag whose IDs are not runs (scrambled, dated) is refused
// naming bizType.

// tinyidLoadingPercent is how far into a segment Tinyid's client starts
// loading the next (Tinyid's LOADING_PERCENT).
const tinyidLoadingPercent = 20

// errNotRun refuses a Tinyid segment of a tag whose IDs are not runs of
// consecutive numbers, in words that say where its IDs are.
var errNotRun = errs.E(errs.BadRequest, "bizType", "this tag's IDs are not runs of consecutive numbers "+
	"(a scrambled or dated tag), so no Tinyid segment can carry them: take them from nextId or nextIdSimple",
	segment.ErrNotConsecutive)

// tinyidRun is one segment for Tinyid's client: the IDs (current, max]
// that are ≡ remainder (mod delta), the next segment loaded from loading
// on.
type tinyidRun struct{ current, loading, max, delta, remainder int64 }

// tinyidSegment reads a nextSegmentId or nextSegmentIdSimple call and
// claims its run.
func (s *Server) tinyidSegment(w http.ResponseWriter, r *http.Request) (tinyidRun, error) {
	raw, err := formQuery(w, r)
	if err != nil {
		return tinyidRun{}, err
	}
	tag, err := tinyidTag(raw)
	if err != nil {
		return tinyidRun{}, err
	}
	if err := s.allowTag(r, raw, tag); err != nil {
		return tinyidRun{}, err
	}
	run, err := s.seg.NextRun(r.Context(), tag, int64(s.ranges.Max()))
	if errors.Is(err, segment.ErrNotConsecutive) {
		return tinyidRun{}, errNotRun
	}
	if err != nil {
		return tinyidRun{}, err
	}
	current, region := run.First-1, s.seg.Region().Normal()
	return tinyidRun{current, current + (run.Last-current)*tinyidLoadingPercent/100, run.Last, region.Count, region.ID}, nil
}

// handleTinyidSegment serves /tinyid/id/nextSegmentId.
func (s *Server) handleTinyidSegment(w http.ResponseWriter, r *http.Request) int {
	run, err := s.tinyidSegment(w, r)
	if err != nil {
		return s.failTinyid(w, r, err)
	}
	bp := getBuf()
	b := append(*bp, `{"data":{"maxId":`...)
	b = strconv.AppendInt(b, run.max, 10)
	b = append(b, `,"loadingId":`...)
	b = strconv.AppendInt(b, run.loading, 10)
	b = append(b, `,"currentId":`...)
	b = strconv.AppendInt(b, run.current, 10)
	b = strconv.AppendInt(append(b, `,"delta":`...), run.delta, 10)
	b = strconv.AppendInt(append(b, `,"remainder":`...), run.remainder, 10)
	*bp = append(b, `},"code":200,"message":""}`...)
	return sendPooledAs(w, springJSON, http.StatusOK, bp)
}

// handleTinyidSegmentSimple serves /tinyid/id/nextSegmentIdSimple, the
// route Tinyid's client calls.
func (s *Server) handleTinyidSegmentSimple(w http.ResponseWriter, r *http.Request) int {
	run, err := s.tinyidSegment(w, r)
	if err != nil {
		return s.failText(w, r, err)
	}
	bp := getBuf()
	b := strconv.AppendInt(*bp, run.current, 10)
	b = strconv.AppendInt(append(b, ','), run.loading, 10)
	b = strconv.AppendInt(append(b, ','), run.max, 10)
	b = strconv.AppendInt(append(b, ','), run.delta, 10)
	*bp = strconv.AppendInt(append(b, ','), run.remainder, 10)
	return sendPooledAs(w, springText, http.StatusOK, bp)
}
