package server

import (
	"net/http"
	"strconv"

	"github.com/idalloc/idalloc/segment"
)

var (
	healthOK       = []byte(okPrefix + `,"status":"ok"}`)
	healthDegraded = []byte(okPrefix + `,"status":"degraded"}`)
)

// handleHealth serves GET /health for load balancers and, with app_tag,
// the IDs buffered for one tag. Draining wins over everything, so a
// balancer probing either form takes the instance out at once.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) int {
	if s.draining.Load() {
		return s.failWith(w, r, segment.ErrClosed, "draining")
	}
	if _, found, _ := queryParam(r.URL.RawQuery, "app_tag"); found {
		return s.handleLeft(w, r)
	}
	switch {
	case s.storeOK.Load():
		return send(w, http.StatusOK, healthOK)
	case s.seg.TotalBuffered() > 0:
		return send(w, http.StatusOK, healthDegraded)
	}
	return s.failWith(w, r, segment.ErrUnavailable, "unavailable")
}

// handleLeft serves GET /health?app_tag=T.
func (s *Server) handleLeft(w http.ResponseWriter, r *http.Request) int {
	tag, err := tagParam(r.URL.RawQuery)
	if err != nil {
		return s.fail(w, r, err)
	}
	left, err := s.seg.Buffered(tag)
	if err != nil {
		return s.fail(w, r, err)
	}
	bp := getBuf()
	b := append(*bp, okPrefix+`,"left":`...)
	b = strconv.AppendInt(b, left, 10)
	*bp = append(b, '}')
	return sendPooled(w, http.StatusOK, bp)
}
