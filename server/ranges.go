package server

import (
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/segment"
)

// errAsValue: as= holds something other than the one shape /alloc knows
// besides its default.
var errAsValue = badParam("as", "must be ranges (or left out, for a list of IDs)")

// asRanges reads /alloc's optional as=ranges.
func asRanges(raw string) (bool, error) {
	v, found, err := queryParam(raw, "as")
	switch {
	case err != nil:
		return false, err
	case !found:
		return false, nil
	case v != "ranges":
		return false, errAsValue
	}
	return true, nil
}

// allocRanges serves GET /alloc?app_tag=T&count=N&as=ranges (docs/api.md §12):
// N IDs, from 1 to max_range, as [first,last] pairs, strictly increasing
// and disjoint. A client that serves IDs itself gets a million in a few
// bytes, where a list would cost the server an encoder's time per ID. A
// tag whose IDs are not runs of numbers (scrambled, dated) is refused
// before anything is claimed; count defaults to 1 as on /alloc.
func (s *Server) allocRanges(w http.ResponseWriter, r *http.Request, tag string) int {
	n, err := countParam(r.URL.RawQuery, s.ranges)
	if err != nil {
		return s.fail(w, r, err)
	}
	var buf [8]segment.Range
	rs, err := s.seg.NextRanges(r.Context(), tag, int64(max(n, 1)), buf[:0])
	if err != nil {
		return s.fail(w, r, err)
	}
	bp := getBuf()
	b := append(*bp, okPrefix+`,"ranges":[`...)
	for i, rg := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, rg.First, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, rg.Last, 10)
		b = append(b, ']')
	}
	*bp = append(b, "]}"...)
	return sendPooled(w, http.StatusOK, bp)
}
