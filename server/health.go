package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/idalloc/idalloc/segment"
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
	if wait := s.snowflakeWait(); wait > 0 && state != stateUnavailable {
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

// snowflakeWait is how long until this instance's own lease may issue
// snowflake IDs, 0 when it may (or there is none).
func (s *Server) snowflakeWait() time.Duration {
	if s.own == nil {
		return 0
	}
	return s.own.Opens(time.Now())
}

// healthWaiting answers /health while the lease waits out a holder the
// store may have forgotten (API.md §3): segments are served, so the state
// stands, and the body says how long snowflake IDs wait, for operators and
// the monitor page; a balancer reads the status code alone.
func (s *Server) healthWaiting(w http.ResponseWriter, state string, wait time.Duration) int {
	bp := getBuf()
	b := append(*bp, okPrefix+`,"status":"`...)
	b = append(b, state...)
	b = append(b, `","snowflake":"waiting for any holder of a lease the store may have forgotten","snowflake_wait_ms":`...)
	b = strconv.AppendInt(b, max(wait.Milliseconds(), 1), 10)
	*bp = append(b, '}')
	return sendPooled(w, http.StatusOK, bp)
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
