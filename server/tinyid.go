package server

import (
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/errs"
)

// Didi Tinyid's HTTP routes (docs/api.md §12): nextId and nextIdSimple here,
// the segment routes its Java client uses in tinyid_segment.go. What
// Tinyid does, from its source (didi/tinyid, tinyid-server:
// controller/IdContronller.java, vo/Response.java, vo/ErrorCode.java,
// service/impl/TinyIdTokenServiceImpl.java, resources/online/
// application.properties; tinyid-base: generator/impl/CachedIdGenerator.java):
//
//   - Routes: server.context-path /tinyid, the controller's
//     @RequestMapping("/id/") and each method's @RequestMapping("nextId"),
//     … without a method: /tinyid/id/nextId etc., any method. Parameters
//     bizType, batchSize (Integer) and token, by name, from the query or a
//     form body; a batchSize that is not an integer is Spring's 400.
//   - batchSize: absent is 1; above batch.size.max (100000 in its
//     properties) it is batch.size.max. Nothing refuses 0 or less: nextId
//     answers an empty list, nextIdSimple an empty text.
//   - nextId answers 200 with Response<List<Long>>, Jackson-written in its
//     field order: {"data":[1,2,3],"code":200,"message":""}. A token not
//     allowed bizType (or an empty bizType or token) is
//     {"data":null,"code":5,"message":"token is error"}; any exception,
//     an unknown bizType ("can not find biztype:x") or a database down, is
//     {"data":null,"code":6,"message":<the exception's message>}. Always
//     HTTP 200.
//   - nextIdSimple answers 200 text: one ID, or batchSize IDs joined by
//     "," with no spaces or end of line; on any failure, the token's
//     included, an empty body, still 200.
//
// idalloc answers the same successes byte for byte (the content types of
// compat.go), from the tag bizType. batchSize above max_batch is max_batch,
// as Tinyid's batch.size.max; one below 1, or not an integer, is refused
// naming batchSize. Errors carry the status of their kind (compat.go):
// nextId in Tinyid's envelope, code 5 for an access token refused
// (allowTag) and 6 for everything else, message the domain's words;
// nextIdSimple as text. token= is handed to allowTag and read nowhere else.

// Tinyid's envelope codes of errors (vo/ErrorCode.java); success is 200
// (vo/Response.java), written in the bodies.
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
