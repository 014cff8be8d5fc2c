package server

import (
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/errs"
)

// Didi Tinyid's ID routes, nextId and nextIdSimple (docs/api.md §12; its
// segment routes are in tinyid_segment.go): any method, bizType, batchSize
// and token from the query or a form body. The successes are Tinyid's byte
// for byte (content types in compat.go): nextId its envelope in Jackson's
// field order, {"data":[1,2,3],"code":200,"message":""}, nextIdSimple the
// IDs joined by ",". batchSize absent is 1; above max_batch it is
// max_batch, as above Tinyid's batch.size.max; below 1 or not an integer
// it is refused naming batchSize (Tinyid answers an empty list or
// Spring's 400). Errors carry their kind's status (compat.go): nextId in
// the envelope, code 5 for an access token refused (allowTag) and 6 for
// anything else, the domain's words as message; nextIdSimple as text.
// token= is read by allowTag only.

// Tinyid's envelope codes of errors; success is 200, written in the
// bodies.
const (
	tinyidTokenErr = 5
	tinyidSysErr   = 6
)

var (
	errMissingBizType    = missingParam("bizType")
	errBatchSize         = badParam("batchSize", "must be an integer from 1 (above max_batch it is max_batch, as Tinyid's batch.size.max)")
	errBatchSizeSpelling = badParam("batchSize", "write it in decimal digits alone, without a sign, spaces or leading zeros ('+' in a query string also reads as a space)")
)

// tinyidIDs reads a nextId or nextIdSimple call and fills a prefix of room
// (of max_batch IDs) with its IDs.
func (s *Server) tinyidIDs(w http.ResponseWriter, r *http.Request, room []int64) ([]int64, error) {
	raw, err := formQuery(w, r)
	if err != nil {
		return nil, err
	}
	tag, err := tinyidTag(raw)
	if err != nil {
		return nil, err
	}
	n, err := s.tinyidBatchSize(raw)
	if err != nil {
		return nil, err
	}
	if err := s.allowTag(r, raw, tag); err != nil {
		return nil, err
	}
	ids := room[:n]
	if err := s.seg.NextN(r.Context(), tag, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// tinyidTag reads bizType, the tag; the allocator judges it as every tag.
func tinyidTag(raw string) (string, error) {
	tag, found, err := queryParam(raw, "bizType")
	switch {
	case err != nil:
		return "", err
	case !found || tag == "":
		return "", errMissingBizType
	}
	return tag, nil
}

// tinyidBatchSize reads batchSize as Tinyid's checkBatchSize does, but
// refuses what Tinyid answers with nothing.
func (s *Server) tinyidBatchSize(raw string) (int, error) {
	v, found, err := queryParam(raw, "batchSize")
	switch {
	case err != nil:
		return 0, err
	case !found || v == "": // Spring binds an empty Integer as null
		return 1, nil
	case spelledOddly(v):
		return 0, errBatchSizeSpelling
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errBatchSize
	}
	return min(n, s.count.Max()), nil
}

// handleTinyidNextID serves /tinyid/id/nextId.
func (s *Server) handleTinyidNextID(w http.ResponseWriter, r *http.Request) int {
	ip := s.idsPool.Get().(*[]int64)
	defer s.idsPool.Put(ip)
	ids, err := s.tinyidIDs(w, r, *ip)
	if err != nil {
		return s.failTinyid(w, r, err)
	}
	bp := getBuf()
	b := appendJoined(append(*bp, `{"data":[`...), ids)
	*bp = append(b, `],"code":200,"message":""}`...)
	return sendPooledAs(w, springJSON, http.StatusOK, bp)
}

// handleTinyidNextIDSimple serves /tinyid/id/nextIdSimple.
func (s *Server) handleTinyidNextIDSimple(w http.ResponseWriter, r *http.Request) int {
	ip := s.idsPool.Get().(*[]int64)
	defer s.idsPool.Put(ip)
	ids, err := s.tinyidIDs(w, r, *ip)
	if err != nil {
		return s.failText(w, r, err)
	}
	bp := getBuf()
	*bp = appendJoined(*bp, ids)
	return sendPooledAs(w, springText, http.StatusOK, bp)
}

// appendJoined appends ids joined by ",".
func appendJoined(b []byte, ids []int64) []byte {
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return b
}

// tinyidCode is the envelope code of an error of kind: Tinyid tells a
// refused token (5) from every other failure (6).
func tinyidCode(kind errs.Kind) int {
	if kind == errs.Unauthorized || kind == errs.Forbidden {
		return tinyidTokenErr
	}
	return tinyidSysErr
}

// failTinyid answers err in Tinyid's envelope,
// {"data":null,"code":5 or 6,"message":"…"}, with the status of its kind.
func (s *Server) failTinyid(w http.ResponseWriter, r *http.Request, err error) int {
	a, rid := s.classifyFor(w, r, err)
	bp := getBuf()
	b := append(*bp, `{"data":null,"code":`...)
	b = strconv.AppendInt(b, int64(tinyidCode(a.kind)), 10)
	b = appendString(append(b, `,"message":`...), a.words(rid))
	*bp = append(b, '}')
	return sendPooledAs(w, springJSON, a.status, bp)
}
