package server

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// handlerFunc answers a request and returns the status it wrote. Returning
// the status spares the per-request ResponseWriter wrapper that metrics
// middleware usually needs.
type handlerFunc func(w http.ResponseWriter, r *http.Request) int

// routes is the handler Handler serves: the router, with the hot paths
// answered before it.
func (s *Server) routes() http.Handler {
	return hotPaths(s.router(), s.wrap("/alloc", s.handleAlloc), s.wrap("/snowflake", s.handleSnowflake),
		s.wrap(leafSegmentPrefix+"{key}", s.handleLeafSegment))
}

// router is the one route table.
func (s *Server) router() *chi.Mux {
	mux := chi.NewRouter()
	for _, rt := range []struct {
		method, pattern string
		h               handlerFunc
	}{
		{http.MethodGet, "/alloc", s.handleAlloc},
		{http.MethodGet, "/health", s.handleHealth},
		{http.MethodHead, "/health", s.handleHealth}, // load balancers probe with HEAD too
		{http.MethodGet, "/tags", s.adminIfToken(s.handleListTags)},
		{http.MethodPost, "/tags", s.admin(s.handleCreateTag)},
		{http.MethodPatch, "/tags/{app_tag}", s.admin(s.handleUpdateTag)},
		// Its app_tag labels list every tag, as GET /tags does.
		{http.MethodGet, "/metrics", s.adminIfToken(s.handleMetrics())},
		{http.MethodGet, "/snowflake", s.handleSnowflake},
		{http.MethodGet, "/snowflake/{id}", s.handleDecompose},
		{http.MethodGet, "/workerid", s.handleOwnLease},
		// The monitor page (monitor.go) holds no data, so it loads for
		// anyone; its data, /status, is guarded like GET /tags.
		{http.MethodGet, "/", s.handleMonitor(assetPage)},
		{http.MethodGet, "/monitor.js", s.handleMonitor(assetScript)},
		{http.MethodGet, "/decode.js", s.handleMonitor(assetDecode)},
		{http.MethodGet, "/monitor.css", s.handleMonitor(assetStyle)},
		{http.MethodGet, "/status", s.adminIfToken(s.handleStatus)},
		{http.MethodPost, "/workerid", s.admin(s.handleAcquire)},
		{http.MethodPost, "/workerid/renew", s.admin(s.handleRenew)},
		{http.MethodPost, "/workerid/release", s.admin(s.handleRelease)},
		// Per-tag tokens and the audit log (docs/api.md §12): admin calls,
		// whether alloc_auth is on or not, so that tokens can be made
		// before it is turned on.
		{http.MethodGet, "/tokens", s.admin(s.handleListTokens)},
		{http.MethodPost, "/tokens", s.admin(s.handleCreateToken)},
		{http.MethodDelete, "/tokens/{name}", s.admin(s.handleRevokeToken)},
		{http.MethodGet, "/audit", s.admin(s.handleAudit)},
		// Leaf's and Tinyid's routes (docs/api.md §12; compat.go): their
		// controllers take every method, and Tinyid's client POSTs.
		{http.MethodGet, leafSegmentPrefix + "{key}", s.handleLeafSegment},
		{http.MethodPost, leafSegmentPrefix + "{key}", s.handleLeafSegment},
		{http.MethodGet, "/api/snowflake/get/{key}", s.handleLeafSnowflake},
		{http.MethodPost, "/api/snowflake/get/{key}", s.handleLeafSnowflake},
		{http.MethodGet, "/api/snowflake/decode", s.handleLeafDecode},
		{http.MethodPost, "/api/snowflake/decode", s.handleLeafDecode},
		{http.MethodGet, "/decodeSnowflakeId", s.handleLeafDecode}, // Leaf's own path for it
		{http.MethodPost, "/decodeSnowflakeId", s.handleLeafDecode},
		{http.MethodGet, "/tinyid/id/nextId", s.handleTinyidNextID},
		{http.MethodPost, "/tinyid/id/nextId", s.handleTinyidNextID},
		{http.MethodGet, "/tinyid/id/nextIdSimple", s.handleTinyidNextIDSimple},
		{http.MethodPost, "/tinyid/id/nextIdSimple", s.handleTinyidNextIDSimple},
		{http.MethodGet, "/tinyid/id/nextSegmentId", s.handleTinyidSegment},
		{http.MethodPost, "/tinyid/id/nextSegmentId", s.handleTinyidSegment},
		{http.MethodGet, "/tinyid/id/nextSegmentIdSimple", s.handleTinyidSegmentSimple},
		{http.MethodPost, "/tinyid/id/nextSegmentIdSimple", s.handleTinyidSegmentSimple},
	} {
		mux.Method(rt.method, rt.pattern, s.wrap(rt.pattern, rt.h))
	}
	// Unmatched requests share one label: raw paths would let any client
	// mint series.
	mux.NotFound(s.wrap("unmatched", func(w http.ResponseWriter, r *http.Request) int {
		return s.fail(w, r, errNotFound)
	}))
	mux.MethodNotAllowed(s.wrap("unmatched", func(w http.ResponseWriter, r *http.Request) int {
		if allow := allowed(mux, r.URL.Path); allow != "" {
			w.Header().Set("Allow", allow)
		}
		return s.fail(w, r, errMethodNotAllowed)
	}))
	return mux
}

// hotPaths answers GET /alloc, GET /snowflake and Leaf's GET
// /api/segment/get/{key} before the router: the first two need no path
// parameters and the third reads its key from the path itself, and
// skipping chi's route context saves two to four allocations and a tree
// walk on every ID request. Everything else, including other methods on
// those paths, goes to the router, which also has these routes, so
// behaviour is the same either way.
func hotPaths(router http.Handler, alloc, snowflake, leaf http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// chi routes on RawPath when the path was percent-encoded; leave
		// those to it so that every request is routed as chi would.
		if r.Method == http.MethodGet && r.URL.RawPath == "" {
			switch p := r.URL.Path; p {
			case "/alloc":
				alloc(w, r)
				return
			case "/snowflake":
				snowflake(w, r)
				return
			default:
				// chi's {key}: one path segment, not empty.
				if key, ok := strings.CutPrefix(p, leafSegmentPrefix); ok && key != "" && !strings.Contains(key, "/") {
					leaf(w, r)
					return
				}
			}
		}
		router.ServeHTTP(w, r)
	}
}

// allowed lists the methods mux serves on path, for a 405's Allow header.
func allowed(mux *chi.Mux, path string) string {
	var ms []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		if mux.Match(chi.NewRouteContext(), m, path) {
			ms = append(ms, m)
		}
	}
	return strings.Join(ms, ", ")
}

var connClose = []string{"close"}

// wrap is the only middleware: it recovers panics into resp_code 8 and
// counts the request under its route pattern, in one deferred call.
func (s *Server) wrap(pattern string, h handlerFunc) http.HandlerFunc {
	rm := s.metrics.forRoute(pattern)
	return func(w http.ResponseWriter, r *http.Request) {
		// An offset from a monotonic base costs one clock read where
		// time.Now costs two (wall and monotonic), and clock reads are
		// slow on virtual machines.
		start := time.Since(s.clockBase)
		status := 0
		if s.draining.Load() {
			// Close each connection after its answer, so keep-alive clients
			// move to other instances during the drain. Closing idle
			// connections at once instead (SetKeepAlivesEnabled(false)) would
			// drop a request already on its way over one, unanswered.
			w.Header()["Connection"] = connClose
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p) // net/http's own way to drop a connection silently
				}
				// fail logs it with the request ID; the text never reaches the client.
				status = s.fail(w, r, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
			}
			rm.observe(status, time.Since(s.clockBase)-start)
		}()
		status = h(w, r)
	}
}

// handleMetrics serves the gatherer; it is the one route whose body is not
// ours, so it records its status through a wrapper.
func (s *Server) handleMetrics() handlerFunc {
	h := promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}})
	return func(w http.ResponseWriter, r *http.Request) int {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		return sw.status
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// slogPrinter adapts the logger to promhttp's ErrorLog.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Error("metrics", "err", fmt.Sprint(v...)) }
