package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/idalloc/idalloc/snowflake"
)

// Snowflakes is what the server needs of leased.Source. Errors:
// workerlease.ErrNoWorkerID before a lease is held, and the snowflake
// package's ErrFenced, ErrClockDriftTryLater, ErrClockDriftTooLargeToRecover.
type Snowflakes interface {
	Next() (int64, error)
	NextN(dst []int64) error
	Layout() snowflake.Layout
}

// handleSnowflake serves GET /snowflake[?count=N], a hot path like /alloc.
func (s *Server) handleSnowflake(w http.ResponseWriter, r *http.Request) int {
	if err := s.allowTag(r, r.URL.RawQuery, ""); err != nil { // snowflake IDs name no tag
		return s.fail(w, r, err)
	}
	if s.flake == nil {
		return s.fail(w, r, snowflake.ErrDisabled)
	}
	n, err := countParam(r.URL.RawQuery, s.count)
	if err != nil {
		return s.fail(w, r, err)
	}
	bp := getBuf()
	b := append(*bp, okPrefix...)
	if n == 0 {
		id, err := s.flake.Next()
		if err != nil {
			putBuf(bp)
			return s.fail(w, r, err)
		}
		b = append(b, `,"id":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `,"id_str":"`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '"')
	} else {
		ip := s.idsPool.Get().(*[]int64)
		ids := (*ip)[:n]
		err := s.flake.NextN(ids)
		if err == nil {
			b = appendIDs(b, ids, true)
		}
		s.idsPool.Put(ip)
		if err != nil {
			putBuf(bp)
			return s.fail(w, r, err)
		}
	}
	*bp = append(b, '}')
	return sendPooled(w, http.StatusOK, bp)
}

var errIDSpelling = badParam("id", "write it in decimal digits alone, without '+' or leading zeros")

// handleDecompose serves GET /snowflake/{id}.
func (s *Server) handleDecompose(w http.ResponseWriter, r *http.Request) int {
	if s.flake == nil {
		return s.fail(w, r, snowflake.ErrDisabled)
	}
	raw := chi.URLParam(r, "id")
	// One spelling per ID keeps caches and logs keyed by the path in step
	// with what we decode. A '-' is left to Decompose, which refuses a
	// negative ID in the layout's words, unless the rest is spelt oddly
	// too ("-007") or is zero: "-0" would decode as ID 0.
	if digits := strings.TrimPrefix(raw, "-"); spelledOddly(digits) || raw == "-0" {
		return s.fail(w, r, errIDSpelling)
	}
	// What is not a 64-bit integer is no snowflake ID: the layout's words
	// say so, as they do for a negative one, which Decompose refuses.
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return s.fail(w, r, snowflake.ErrInvalidID)
	}
	p, err := s.flake.Layout().Decompose(id)
	if err != nil {
		return s.fail(w, r, err)
	}
	return s.sendJSON(w, r, http.StatusOK, struct {
		envelope
		ID          int64  `json:"id"`
		IDStr       string `json:"id_str"`
		Time        string `json:"time"`
		TimestampMS int64  `json:"timestamp_ms"`
		WorkerID    int64  `json:"worker_id"`
		Sequence    int64  `json:"sequence"`
	}{success, p.ID, strconv.FormatInt(p.ID, 10), formatTime(p.Time), p.TimestampMS, p.WorkerID, p.Sequence})
}
