// Package server is idalloc's HTTP API: segment IDs (/alloc), snowflake IDs
// (/snowflake), worker-ID leases (/workerid), tag administration (/tags),
// per-tag access tokens (/tokens) and the audit log (/audit), load-balancer
// health (/health), Prometheus metrics (/metrics) and a monitor page (/,
// polling /status), exactly as the contract in docs/api.md describes them; and
// Meituan Leaf's and Didi Tinyid's routes, answered in those services'
// shapes (compat.go), so their clients switch by URL. With alloc_auth on,
// the ID routes take a per-tag token (allowtag.go).
//
// Every other response is a JSON envelope {"resp_code":N,"msg":"...",...}.
// The server is an adapter: it parses its wire format (query parameters,
// JSON bodies) and refuses what it cannot read, calls the domain packages,
// which own the rules for tags, steps, starts, clusters, tokens and IDs and
// the words that refuse them, and maps their errors by Kind to a resp_code
// and HTTP status in one table (errors.go), sending the domain's message as
// it is. Anything neither the domain nor the server names is answered as an
// internal error with a request ID, never with the error's own text. No
// input reaches a store, a log line or a metric label before the domain
// has accepted it.
//
// The hot paths (/alloc, /snowflake, Leaf's segment route) read the raw
// query or path, build the body with strconv into a pooled buffer and
// write it once, so they cost less than a bare chi handler using
// url.Values and fmt.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
)

// Defaults for zero Config fields.
const (
	DefaultHealthInterval = 2 * time.Second
)

// http.Server limits. WriteTimeout is well above the segment allocator's
// wait for a fetch (1s by default), so a request that waits still answers;
// IdleTimeout is above the 60s that common load balancers keep idle
// connections, so the balancer, not us, closes them and never races a reuse.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 15 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 16 << 10
	shutdownTimeout   = 10 * time.Second
)

// Config tunes a Server. Zero values mean the documented defaults.
type Config struct {
	// AdminToken guards POST /tags, PATCH /tags/{app_tag}, POST
	// /workerid*, GET /tags, /status and /metrics: they need "Authorization: Bearer <AdminToken>". Empty
	// means the POSTs are served to loopback clients that name a loopback
	// Host, and the GETs to anyone. Either way an admin call a browser
	// marks as coming from another origin (Origin, Sec-Fetch-Site) is
	// refused.
	AdminToken string
	// AllocAuth makes /alloc and /snowflake need a token that Deps.Guard
	// allows (docs/api.md §12); off, they are served to anyone.
	AllocAuth bool
	// MaxBatch is the largest count of /alloc and /snowflake; 0 means
	// segment.DefaultMaxBatch.
	MaxBatch int
	// MaxRange is the largest count of /alloc?as=ranges (max_range); 0
	// means segment.DefaultMaxRange.
	MaxRange int
	// HealthInterval is how often the store is pinged for /health; 0 means 2s.
	HealthInterval time.Duration
	// Logger receives request errors and health transitions; nil discards.
	Logger *slog.Logger
	// Observer is the domain's metrics (metrics.New), watching the
	// allocator (Observer.Watch): GET /status reads its snowflake counts
	// and IDs buffered, and ranks busiest first by it. Metrics is where
	// the server counts its requests (NewMetrics), and Gatherer what GET
	// /metrics serves. The three come together: main passes the Observer
	// it gave segment.Config.Observer and the registry they all live on.
	// Leave all three nil and New makes a registry of its own, with an
	// Observer watching Deps, and serves it. Give each Server its own
	// Metrics.
	Observer *metrics.Observer
	Metrics  *Metrics
	Gatherer prometheus.Gatherer
	// MaxConns caps the open connections (max_conns); 0 means
	// frontend.DefaultMaxConns. At the cap a new connection whose
	// request's headers have been coming for over 250 ms, else the one
	// idle the longest (a keep-alive connection between requests), else
	// the new one whose headers have been coming the longest, is closed to
	// make room; with every one in a request a new connection is answered
	// 503 (resp_code 3, kind unavailable) and closed. See frontend.Limiter.
	MaxConns int
}

// testHandler, when set, wraps the handler of every Server New makes. Only
// the package's tests set it, before they make any Server: they check every
// answer against docs/openapi.yaml (openapi_test.go).
var testHandler func(http.Handler) http.Handler

// Server answers the HTTP API. It starts one goroutine, the store health
// checker, which Close stops and waits for.
type Server struct {
	seg    Segments
	store  Pinger
	flake  Snowflakes
	leases Leases
	own    OwnLease
	// guard is Deps.Guard with alloc_auth on, nil with it off: the one
	// check the ID routes make (allowTag).
	guard  Guard
	tokens Tokens
	// obs ranks tags by the IDs they issued lately, for the listings'
	// busiest first, and counts snowflake IDs and drifts for /status.
	obs      *metrics.Observer
	metrics  *Metrics
	gatherer prometheus.Gatherer
	log      *slog.Logger
	handler  http.Handler

	adminToken     string
	count          segment.CountLimit // of /alloc and /snowflake
	ranges         segment.CountLimit // of /alloc?as=ranges
	healthInterval time.Duration
	maxConns       int
	// conns is Serve's connection cap, while serving, for Cut.
	conns atomic.Pointer[frontend.Limiter]

	idsPool sync.Pool // *[]int64 of len count.Max()

	storeOK   atomic.Bool
	draining  atomic.Bool
	clockBase time.Time // request latencies are measured as offsets from it
	// leafZone is the zone Leaf's decode route writes times in: the
	// process's own, as Leaf writes them in the JVM's (leaf.go).
	leafZone *time.Location

	// Generated request IDs are a per-process random prefix and a counter:
	// unique across instances without a random read per request.
	ridPrefix string
	ridSeq    atomic.Uint64

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// New checks cfg and deps, pings the store once so /health is accurate from
// the first request, and starts the health checker. Errors: a nil Segments
// or Store, an OwnLease without Leases, AllocAuth without a Guard, a
// negative MaxBatch, MaxRange,
// HealthInterval or MaxConns, or some but not all of Observer, Metrics
// and Gatherer.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Segments == nil || deps.Store == nil {
		return nil, errors.New("server: Deps.Segments and Deps.Store are required")
	}
	if deps.OwnLease != nil && deps.Leases == nil {
		return nil, errors.New("server: Deps.OwnLease needs Deps.Leases, for max_worker_id")
	}
	if cfg.AllocAuth && deps.Guard == nil {
		return nil, errors.New("server: Config.AllocAuth needs Deps.Guard")
	}
	if cfg.MaxBatch < 0 || cfg.MaxRange < 0 || cfg.HealthInterval < 0 || cfg.MaxConns < 0 {
		return nil, errors.New("server: MaxBatch, MaxRange, HealthInterval and MaxConns must not be negative")
	}
	s := &Server{
		seg:            deps.Segments,
		store:          deps.Store,
		flake:          deps.Snowflake,
		leases:         deps.Leases,
		own:            deps.OwnLease,
		tokens:         deps.Tokens,
		obs:            cfg.Observer,
		metrics:        cfg.Metrics,
		gatherer:       cfg.Gatherer,
		log:            cfg.Logger,
		maxConns:       cfg.MaxConns,
		adminToken:     cfg.AdminToken,
		count:          segment.NewCountLimit(cfg.MaxBatch),
		ranges:         segment.NewRangeLimit(cfg.MaxRange),
		healthInterval: orDefault(cfg.HealthInterval, DefaultHealthInterval),
		clockBase:      time.Now(),
		leafZone:       time.Local,
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case s.obs == nil && s.metrics == nil && s.gatherer == nil:
		if err := s.ownMetrics(deps); err != nil {
			return nil, err
		}
	case s.obs == nil || s.metrics == nil || s.gatherer == nil:
		return nil, errors.New("server: Config.Observer, Config.Metrics and Config.Gatherer go together: set all three or none")
	}
	s.idsPool.New = func() any {
		ids := make([]int64, s.count.Max())
		return &ids
	}
	var prefix [4]byte
	if _, err := rand.Read(prefix[:]); err != nil {
		return nil, fmt.Errorf("server: request ID prefix: %w", err)
	}
	s.ridPrefix = hex.EncodeToString(prefix[:]) + "-"
	if cfg.AllocAuth {
		s.guard = deps.Guard
	}
	s.handler = s.routes()
	if testHandler != nil {
		s.handler = testHandler(s.handler)
	}

	if s.adminToken == "" {
		s.log.Warn("no admin_token configured: POST /tags and POST /workerid* are served to loopback clients only, addressed as localhost, 127.0.0.0/8 or [::1]")
	}

	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan struct{})
	if err := s.ping(ctx); err != nil {
		s.log.Warn("store unreachable", "err", err)
	} else {
		s.storeOK.Store(true)
	}
	go s.checkStore(ctx)
	return s, nil
}

// ownMetrics makes a registry of the server's own, with the domain's
// metrics watching deps and the server's, for New without them.
func (s *Server) ownMetrics(deps Deps) error {
	reg := prometheus.NewRegistry()
	obs, err := metrics.New(reg)
	if err != nil {
		return err
	}
	src := metrics.Sources{Segments: deps.Segments, Snowflake: deps.Snowflake != nil, Lease: deps.OwnLease}
	if err := obs.Watch(src); err != nil {
		return err
	}
	if s.metrics, err = NewMetrics(reg); err != nil {
		return err
	}
	s.obs, s.gatherer = obs, reg
	return nil
}

// orDefault returns v, or def when v is zero.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Handler returns the router; it is safe to serve from several listeners.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers on ln, under MaxConns connections, until ctx is done, then
// drains: /health answers 503 "draining" at once so load balancers take
// the instance out, while every other route, on old and new connections,
// is served for drain; then it shuts the listener down, waits for requests
// in flight (until Cut, or shutdownTimeout), and returns nil. It returns
// early with http.Server.Serve's error if that fails. Serve leaves the
// health checker running and the dependencies open: call Close, then
// close the allocator, which gives its unused IDs back. A Server serves
// once.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	conns := frontend.Limit(ln, frontend.Cap{
		Max: s.maxConns, Refusal: atCapRefusal, Metrics: s.metrics.conns, Log: s.log,
	})
	s.conns.Store(conns)
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         connState,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(conns) }()

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true) // wrap answers with Connection: close from now on
	s.log.Info("draining", "for", drain)

	timer := time.NewTimer(drain)
	select {
	case err := <-served:
		timer.Stop()
		return err
	case <-timer.C:
	}

	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		s.log.Warn("shutdown: closing connections still busy", "err", err)
		_ = hs.Close() // the requests it cuts have outlived every timeout
	}
	<-served // http.ErrServerClosed, by construction
	return nil
}

// Cut closes every connection open now, which ends the shutdown of a
// draining Serve: the stop calls it when connections outlive their share
// of shutdown_timeout.
func (s *Server) Cut() {
	if conns := s.conns.Load(); conns != nil {
		conns.CloseAll()
	}
}

// connState is http.Server's ConnState hook: it tells the connection cap
// which connections are idle keep-alive ones, between requests, and which
// are new, their request's headers not yet read, so that at max_conns
// those are closed first and slow or half-sent headers cannot hold the
// cap (docs/api.md §15). It runs on every request, twice, and costs an
// atomic store and a load (frontend.SetIdle); a new connection costs a
// clock read more (frontend.Begin). net/http reports a connection active
// once its request's headers are read, and a keep-alive connection idle
// until then, whatever part of its next request has arrived.
func connState(c net.Conn, state http.ConnState) {
	if state == http.StateNew {
		frontend.Begin(c, time.Now())
		return
	}
	frontend.SetIdle(c, state == http.StateIdle)
}

// Close stops the health checker and waits for it. It is idempotent and
// does not close the dependencies.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		<-s.done
	})
	return nil
}

// checkStore pings the store every healthInterval until ctx is done, so
// /health follows the store even when no request touches it.
func (s *Server) checkStore(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.healthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.pingStore(ctx)
		}
	}
}

// ping is bounded by the interval so a hung store turns /health degraded
// within two intervals, and by the default interval so New never waits long.
func (s *Server) ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, min(s.healthInterval, DefaultHealthInterval))
	defer cancel()
	return s.store.Ping(pctx)
}

// pingStore records one ping and logs transitions only.
func (s *Server) pingStore(ctx context.Context) {
	err := s.ping(ctx)
	if ctx.Err() != nil {
		return // stopping: a cancelled ping says nothing about the store
	}
	ok := err == nil
	if s.storeOK.Swap(ok) == ok {
		return
	}
	if ok {
		s.log.Info("store reachable again")
	} else {
		s.log.Warn("store unreachable", "err", err)
	}
}
