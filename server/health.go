package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/workerlease"
)

var (
	healthOK       = []byte(okPrefix + `,"status":"ok"}`)
	healthDegraded = []byte(okPrefix + `,"status":"degraded"}`)
)

// Instance states, as /health and /status name them.
const (
	stateOK          = "ok"
	stateDegraded    = "degraded"
	stateUnavailable = "unavailable"
	stateDraining    = "draining"
)

// health is the instance's state: draining wins over everything; then ok
// while the background checker reaches the store; degraded while it does
// not but IDs remain buffered; else unavailable. /health answers it to
// load balancers and /status shows it, so the two never disagree.
func (s *Server) health() string {
	switch {
	case s.draining.Load():
		return stateDraining
	case s.storeOK.Load():
		return stateOK
	case s.seg.TotalBuffered() > 0:
		return stateDegraded
	}
	return stateUnavailable
}

// handleHealth serves GET /health for load balancers and, with app_tag,
// the IDs buffered for one tag. Draining wins over everything, so a
// balancer probing either form takes the instance out at once.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) int {
	state := s.health()
	if state == stateDraining {
		return s.failWith(w, r, segment.ErrClosed, state)
	}
	if _, found, _ := queryParam(r.URL.RawQuery, "app_tag"); found {
		return s.handleLeft(w, r)
	}
	if wait := s.snowflakeWait(); wait.Reason != "" && state != stateUnavailable {
		return s.healthWaiting(w, state, wait)
	}
	switch state {
	case stateOK:
		return send(w, http.StatusOK, healthOK)
	case stateDegraded:
		return send(w, http.StatusOK, healthDegraded)
	}
	return s.failWith(w, r, segment.ErrUnavailable, state)
}

// snowflakeWait is why, and about how long, this instance's own lease
// may not issue snowflake IDs yet; the zero Wait when it may (or there is
// none).
func (s *Server) snowflakeWait() workerlease.Wait {
	if s.own == nil {
		return workerlease.Wait{}
	}
	return s.own.Wait(time.Now())
}

// healthWaiting answers /health while the instance holds no lease whose
// fence is open (docs/api.md §2): from its start until its first grant opens,
// through a grant's wait for a holder the store may have forgotten (§3),
// and after a loss. Segments are served, so the state stands, and the body
// says why and how long snowflake IDs wait, for operators and the monitor
// page; a balancer reads the status code alone.
func (s *Server) healthWaiting(w http.ResponseWriter, state string, wait workerlease.Wait) int {
	bp := getBuf()
	b := append(*bp, okPrefix+`,"status":"`...)
	b = append(b, state...)
	b = append(b, `","snowflake":`...)
	b = appendString(b, wait.Reason)
	b = append(b, `,"snowflake_wait_ms":`...)
	b = strconv.AppendInt(b, max(wait.For.Milliseconds(), 1), 10)
	*bp = append(b, '}')
	return sendPooled(w, http.StatusOK, bp)
}

// handleLeft serves GET /health?app_tag=T.
func (s *Server) handleLeft(w http.ResponseWriter, r *http.Request) int {
	tag, err := tagParam(r.URL.RawQuery)
	if err != nil {
		return s.fail(w, r, err)
	}
	if err := s.allowTagInfo(r, tag); err != nil {
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
