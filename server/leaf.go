package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/snowflake"
)

// Meituan Leaf's HTTP routes (docs/api.md §12), so that a Leaf client
// switches by changing its URL: /api/segment/get/{key} and
// /api/snowflake/get/{key} (any method; the snowflake route ignores the
// key) answer the ID as Leaf's controller does, 200 text/plain;charset=UTF-8
// with the digits alone; /decodeSnowflakeId?snowflakeId=N (Leaf's monitor
// route, also at /api/snowflake/decode) answers Leaf's Jackson-written
// map, {"workerId":"39","sequenceId":"3448","timestamp":"1567733700834(2019-09-06 09:35:00.834)"}:
// every value a string, the time in the server's zone, decoded with
// idalloc's epoch and layout (those of /snowflake/{id}).
//
// Where Leaf answers every failure 500 with Spring's error page, errors
// here carry their kind's status (compat.go): text on the get routes,
// {"errorMsg":"…"} on decode, as Leaf answers a snowflakeId that is not a
// long. A negative snowflakeId, which Leaf decodes into nonsense, is
// refused.

// leafTimeLayout is Leaf's decode time, SimpleDateFormat's
// "yyyy-MM-dd HH:mm:ss.SSS".
const leafTimeLayout = "2006-01-02 15:04:05.000"

// leafSegmentPrefix is the path of Leaf's segment route before its key.
const leafSegmentPrefix = "/api/segment/get/"

// handleLeafSegment serves /api/segment/get/{key}: the tag key's next ID.
func (s *Server) handleLeafSegment(w http.ResponseWriter, r *http.Request) int {
	// The key from the unescaped path: chi hands {key} over as the client
	// escaped it. The allocator judges it as every tag.
	tag := strings.TrimPrefix(r.URL.Path, leafSegmentPrefix)
	if err := s.allowTag(r, r.URL.RawQuery, tag); err != nil {
		return s.failText(w, r, err)
	}
	id, err := s.seg.Next(r.Context(), tag)
	if err != nil {
		return s.failText(w, r, err)
	}
	bp := getBuf()
	*bp = strconv.AppendInt(*bp, id, 10)
	return sendPooledAs(w, springText, http.StatusOK, bp)
}

// handleLeafSnowflake serves /api/snowflake/get/{key}: a snowflake ID,
// whatever the key, as Leaf's generator ignores it. The key is not even
// checked, so every call that Leaf answers is answered.
func (s *Server) handleLeafSnowflake(w http.ResponseWriter, r *http.Request) int {
	if s.flake == nil {
		return s.failText(w, r, snowflake.ErrDisabled)
	}
	if err := s.allowTag(r, r.URL.RawQuery, ""); err != nil {
		return s.failText(w, r, err)
	}
	id, err := s.flake.Next()
	if err != nil {
		return s.failText(w, r, err)
	}
	bp := getBuf()
	*bp = strconv.AppendInt(*bp, id, 10)
	return sendPooledAs(w, springText, http.StatusOK, bp)
}

// Leaf's decode parameter, refused in the layout's words (snowflake's
// ErrInvalidID) under the name the request gave it.
var (
	errLeafSnowflakeID = errs.E(errs.BadRequest, "snowflakeId", snowflake.ErrInvalidID.Reason, snowflake.ErrInvalidID)
	errLeafIDSpelling  = badParam("snowflakeId", "write it in decimal digits alone, without a sign or leading zeros")
)

// handleLeafDecode serves /decodeSnowflakeId and /api/snowflake/decode
// with ?snowflakeId=: the ID's worker, sequence and time, as Leaf's
// decode writes them.
func (s *Server) handleLeafDecode(w http.ResponseWriter, r *http.Request) int {
	if s.flake == nil {
		return s.failLeafDecode(w, r, snowflake.ErrDisabled)
	}
	raw, err := formQuery(w, r)
	if err != nil {
		return s.failLeafDecode(w, r, err)
	}
	v, found, err := queryParam(raw, "snowflakeId")
	switch {
	case err != nil:
		return s.failLeafDecode(w, r, err)
	case !found || v == "":
		return s.failLeafDecode(w, r, missingParam("snowflakeId"))
	case strings.HasPrefix(v, "-"):
		// Leaf decodes a negative long into nonsense; no ID is negative.
		return s.failLeafDecode(w, r, errLeafSnowflakeID)
	case spelledOddly(v):
		return s.failLeafDecode(w, r, errLeafIDSpelling)
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return s.failLeafDecode(w, r, errLeafSnowflakeID)
	}
	p, err := s.flake.Layout().Decompose(id)
	if err != nil {
		return s.failLeafDecode(w, r, err)
	}
	bp := getBuf()
	b := append(*bp, `{"workerId":"`...)
	b = strconv.AppendInt(b, p.WorkerID, 10)
	b = append(b, `","sequenceId":"`...)
	b = strconv.AppendInt(b, p.Sequence, 10)
	b = append(b, `","timestamp":"`...)
	b = strconv.AppendInt(b, p.TimestampMS, 10)
	b = append(b, '(')
	b = p.Time.In(s.leafZone).AppendFormat(b, leafTimeLayout)
	*bp = append(b, `)"}`...)
	return sendPooledAs(w, springJSON, http.StatusOK, bp)
}

// failLeafDecode answers err as Leaf's decode answers a bad ID,
// {"errorMsg":"…"}, with the status of its kind.
func (s *Server) failLeafDecode(w http.ResponseWriter, r *http.Request, err error) int {
	a, rid := s.classifyFor(w, r, err)
	bp := getBuf()
	b := appendString(append(*bp, `{"errorMsg":`...), a.words(rid))
	*bp = append(b, '}')
	return sendPooledAs(w, springJSON, a.status, bp)
}
