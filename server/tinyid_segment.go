package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// Tinyid's segment routes (docs/api.md §12), which its Java client takes its
// IDs from, so that the client runs against idalloc unchanged. What
// Tinyid does, from its source (didi/tinyid, tinyid-server:
// controller/IdContronller.java, service/impl/DbSegmentIdServiceImpl.java,
// common/Constants.java; tinyid-base: entity/SegmentId.java,
// entity/Result.java, entity/ResultCode.java,
// generator/impl/CachedIdGenerator.java; tinyid-client:
// factory/impl/IdGeneratorFactoryClient.java,
// service/impl/HttpSegmentIdServiceImpl.java, utils/TinyIdHttpUtils.java):
//
//   - /tinyid/id/nextSegmentId and /tinyid/id/nextSegmentIdSimple, any
//     method, parameters bizType and token (no batchSize). Each call
//     advances the bizType's max_id by its step and answers the segment
//     (max_id − step, max_id]: currentId = max_id − step (the ID before the
//     first), maxId = max_id, loadingId = currentId + step·20/100 (where
//     the client starts loading the next segment), and the row's delta
//     (default 1) and remainder (default 0): the client issues the
//     numbers ≡ remainder (mod delta) in it.
//   - nextSegmentId answers 200 with Response<SegmentId>, Jackson-written
//     in the fields' order: {"data":{"maxId":…,"loadingId":…,"currentId":…,
//     "delta":…,"remainder":…},"code":200,"message":""}; errors as
//     nextId's (code 5 token, 6 anything else, HTTP 200).
//     nextSegmentIdSimple answers 200 text "currentId,loadingId,maxId,
//     delta,remainder", or an empty body on any failure.
//   - The client (IdGeneratorFactoryClient) POSTs, with no body, to
//     http://<server>/tinyid/id/nextSegmentIdSimple?token=<t>&bizType=<b>
//     (one of its servers at random), with java.net.HttpURLConnection
//     (5 s timeouts by default). It reads the body's lines joined,
//     splits it on "," and parses the five fields in that order; an empty
//     body, or a failed request (a status of 400 and above throws in
//     getInputStream, caught, so no body), is no segment, and the caller
//     gets TinyIdSysException "error query segmentId: null". Its
//     CachedIdGenerator serves the current segment: currentId += delta
//     (after aligning currentId to the remainder once), an ID above maxId
//     means the segment is spent (take the next, or fetch one at once),
//     and the first ID at or above loadingId starts loading the next
//     segment on a background thread.
//
// idalloc hands out one run of IDs of the tag (NextRun): what is left of
// its current segment on this instance, at most max_range. A run from
// First to Last is currentId First − 1, maxId Last, and loadingId
// currentId + (Last − currentId)·20/100, as Tinyid computes it from its
// step, so the client prefetches at the same point of the run; delta and
// remainder are the instance's region count and ID (docs/api.md §13), 1 and 0
// without regions: in region r of R the run is every R-th number from
// First ≡ r, and the client, which aligns currentId to the remainder
// before it adds delta, issues exactly those. Errors as nextId's and
// nextIdSimple's (tinyid.go). Scrambled and dated tags are no runs of
// consecutive numbers and are refused naming bizType.

// tinyidLoadingPercent is how far into a segment Tinyid's client starts
// loading the next (common/Constants.java's LOADING_PERCENT).
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
