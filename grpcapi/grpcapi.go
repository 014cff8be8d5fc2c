// Package grpcapi is idalloc's gRPC front end (docs/api.md §14), service
// idalloc.v1.IDAllocator of proto/idalloc/v1/idalloc.proto: segment IDs
// (Next, NextRanges, and StreamRanges, which keeps a caller supplied with
// ranges on one stream), snowflake IDs (Snowflake, DecodeSnowflake), tags
// (CreateTag, GetTag, ListTags, UpdateTag) and worker-ID leases (Acquire,
// Renew, ReleaseWorkerID), on the same allocator, snowflake source, leases,
// admin rules and per-tag tokens as the HTTP API. Beside it, the standard
// grpc.health.v1.Health, which follows /health, and server reflection, so
// that grpcurl and grpc_health_probe work without the .proto.
//
// Like packages server and resp it is an adapter: it reads its messages,
// calls the domain packages, which own the rules and the words, and maps
// their errors by Kind to a gRPC status code in one table (errors.go),
// the kind and the field in the status's details.
//
// The connection cap is every front end's (frontend.Limiter): this package
// tells it which connections are idle (no call in progress) and which are
// still in their HTTP/2 handshake (conns.go).
package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/frontend"
	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Defaults for zero Config fields.
const (
	// DefaultHealthInterval is how often the store is pinged for the
	// health service, as for /health.
	DefaultHealthInterval = 2 * time.Second
)

// The server's bounds, each the gRPC form of the HTTP server's
// (docs/api.md §2, "Limits of the HTTP server").
const (
	// maxRecvMsgSize bounds a request message, as maxBodyBytes bounds an
	// HTTP body: the largest legitimate one (CreateTag) is a few hundred
	// bytes.
	maxRecvMsgSize = 64 << 10
	// maxHeaderListSize bounds a call's metadata, as HTTP's headers.
	maxHeaderListSize = 16 << 10
	// handshakeTimeout bounds a new connection's HTTP/2 preface, as HTTP's
	// ReadHeaderTimeout bounds a request's headers.
	handshakeTimeout = 5 * time.Second
	// idleTimeout closes a connection with no call in progress for so
	// long (a GOAWAY, which clients follow by reconnecting), as RESP's
	// resp_idle_timeout.
	idleTimeout = 5 * time.Minute
	// keepaliveTime and keepaliveTimeout: a connection silent for
	// keepaliveTime is pinged, and closed when the ping goes unanswered
	// for keepaliveTimeout, so that a client gone without a FIN does not
	// hold a slot of the cap.
	keepaliveTime    = time.Minute
	keepaliveTimeout = 20 * time.Second
	// minPingInterval: a client that pings more often is told
	// ENHANCE_YOUR_CALM and closed (keepalive enforcement).
	minPingInterval = 10 * time.Second
	// shutdownTimeout bounds, once the drain is over, the wait for calls
	// in progress; then the connections are cut. It is the HTTP server's.
	shutdownTimeout = 10 * time.Second
)

// ServiceName is the service's full name, which the health service
// answers for beside "".
const ServiceName = "idalloc.v1.IDAllocator"

// Segments is what the front end needs of segment.Allocator. Its methods
// refuse an invalid tag, field or count with an *errs.Error, as they
// answer unknown tags, exhaustion and outages; anything else is answered
// as an internal error.
type Segments interface {
	Next(ctx context.Context, tag string) (int64, error)
	NextN(ctx context.Context, tag string, dst []int64) error
	// A dated tag whose IDs are text (docs/api.md §11) is refused by
	// Next and NextN with segment.ErrTextOnly; these serve it.
	AppendNextText(ctx context.Context, tag string, dst []byte) ([]byte, error)
	NextTextN(ctx context.Context, tag string, buf []int64) (segment.TextBatch, error)
	NextRanges(ctx context.Context, tag string, n int64, dst []segment.Range) ([]segment.Range, error)
	// DatedFormat is tag's dated format, nil for another format; Now is
	// the clock its periods are read by.
	DatedFormat(tag string) *dated.Format
	Now() time.Time
	TotalBuffered() int64
	Snapshot(tag string) (segment.TagSnapshot, bool)
	TagPage(q segment.PageQuery) segment.Page
	CreateTag(ctx context.Context, t segment.NewTag) (segment.Tag, error)
	UpdateTag(ctx context.Context, tag string, c segment.TagChange) (segment.Tag, error)
}

// Snowflakes is what the front end needs of leased.Source.
type Snowflakes interface {
	Next() (int64, error)
	NextN(dst []int64) error
	Layout() snowflake.Layout
}

// Leases is what the front end needs of workerlease.Service; cluster ""
// is the service's default.
type Leases interface {
	Acquire(ctx context.Context, cluster, holder string) (workerlease.Lease, error)
	Renew(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) (workerlease.Lease, error)
	Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error
	TTL() time.Duration
}

// Guard is what the front end needs of access.Guard.
type Guard interface {
	Allow(token, tag string) error
	AllowAny(token string) error
}

// Auditor is what the front end needs of access.Admin: the audit log of
// the admin changes made here.
type Auditor interface {
	Note(ctx context.Context, log *slog.Logger, c access.Change)
}

// Pinger reports whether the store answers; the health service asks it
// in the background.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the front end's collaborators. Segments and Store are
// required.
type Deps struct {
	Segments Segments
	Store    Pinger
	// Snowflake serves Snowflake and DecodeSnowflake; nil answers them
	// no_worker_id (snowflake mode off).
	Snowflake Snowflakes
	// Leases serves the worker-ID calls; nil answers them no_worker_id.
	Leases Leases
	// Guard checks the ID calls' tokens when Config.AllocAuth is on, and
	// is required then.
	Guard Guard
	// Audit records the admin changes made here; nil records nothing.
	Audit Auditor
}

// Config tunes a Server. Zero values mean the documented defaults.
type Config struct {
	// AdminToken guards the admin calls (CreateTag, UpdateTag, the
	// worker-ID calls, and GetTag and ListTags when it is set): they
	// need the metadata "authorization: Bearer <AdminToken>". Empty
	// means they are served to loopback peers only, and GetTag and
	// ListTags to anyone unless AllocAuth is on.
	AdminToken string
	// AllocAuth makes Next, NextRanges, StreamRanges and Snowflake need a
	// per-tag token that Deps.Guard allows (docs/api.md §12).
	AllocAuth bool
	// MaxBatch is the largest count of Next and Snowflake; 0 means
	// segment.DefaultMaxBatch. MaxRange is the largest of NextRanges and
	// of a StreamRanges batch; 0 means segment.DefaultMaxRange.
	MaxBatch, MaxRange int
	// MaxConns caps the open connections (grpc_max_conns); 0 means
	// frontend.DefaultMaxConns. At the cap a connection still in its
	// HTTP/2 handshake for over 250 ms, else the one idle the longest (no
	// call in progress), else the one in its handshake the longest, is
	// closed to make room; with every one in a call a new connection is
	// sent a GOAWAY saying so and closed (frontend.Limiter).
	MaxConns int
	// MaxStreams caps the calls in progress on one connection
	// (grpc_max_streams); 0 means frontend.DefaultMaxStreams.
	MaxStreams int
	// HealthInterval is how often the store is pinged for the health
	// service; 0 means DefaultHealthInterval.
	HealthInterval time.Duration
	// Logger receives internal errors and the drain; nil discards.
	Logger *slog.Logger
	// Metrics is where the front end counts; nil makes a registry of its
	// own (for tests). Give each Server its own Metrics.
	Metrics *Metrics
}

// Server answers gRPC. It starts goroutines only in Serve (gRPC's, and
// the health checker), and Serve returns once they have all ended.
type Server struct {
	idallocv1.UnimplementedIDAllocatorServer

	seg    Segments
	store  Pinger
	flake  Snowflakes
	leases Leases
	guard  Guard // nil with alloc_auth off
	audit  Auditor
	log    *slog.Logger
	m      *Metrics

	admin          string
	count          segment.CountLimit // of Next and Snowflake
	ranges         segment.CountLimit // of NextRanges and a StreamRanges batch
	maxConns       int
	healthInterval time.Duration

	gs     *grpc.Server
	health *health.Server

	// drained is closed when the drain ends: streams still open are ended
	// then, so that the graceful stop need not wait for them.
	drained   chan struct{}
	drainOnce sync.Once
	cutC      chan struct{}
	cutOnce   sync.Once
	serving   atomic.Bool
}

// New checks cfg and deps, registers the services and pings the store
// once, for the health service. Errors: a nil
// Segments or Store, AllocAuth without a Guard, a negative MaxBatch,
// MaxRange, MaxConns, MaxStreams or HealthInterval.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Segments == nil || deps.Store == nil {
		return nil, errors.New("grpcapi: Deps.Segments and Deps.Store are required")
	}
	if cfg.AllocAuth && deps.Guard == nil {
		return nil, errors.New("grpcapi: Config.AllocAuth needs Deps.Guard")
	}
	if cfg.MaxBatch < 0 || cfg.MaxRange < 0 || cfg.MaxConns < 0 || cfg.MaxStreams < 0 || cfg.HealthInterval < 0 {
		return nil, errors.New("grpcapi: MaxBatch, MaxRange, MaxConns, MaxStreams and HealthInterval must not be negative")
	}
	s := &Server{
		seg: deps.Segments, store: deps.Store, flake: deps.Snowflake, leases: deps.Leases, audit: deps.Audit,
		log: cfg.Logger, m: cfg.Metrics, admin: cfg.AdminToken,
		count:          segment.NewCountLimit(cfg.MaxBatch),
		ranges:         segment.NewRangeLimit(cfg.MaxRange),
		maxConns:       cfg.MaxConns,
		healthInterval: cfg.HealthInterval,
		drained:        make(chan struct{}),
		cutC:           make(chan struct{}),
	}
	if cfg.AllocAuth {
		s.guard = deps.Guard
	}
	if s.healthInterval == 0 {
		s.healthInterval = DefaultHealthInterval
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.m == nil {
		m, err := newMetrics(nil)
		if err != nil {
			return nil, err
		}
		s.m = m
	}
	streams := cfg.MaxStreams
	if streams == 0 {
		streams = frontend.DefaultMaxStreams
	}
	s.gs = grpc.NewServer(
		grpc.Creds(connCreds{}),
		grpc.StatsHandler(connStats{}),
		grpc.ChainUnaryInterceptor(s.countUnary),
		grpc.ChainStreamInterceptor(s.countStream),
		grpc.MaxRecvMsgSize(maxRecvMsgSize),
		grpc.MaxHeaderListSize(maxHeaderListSize),
		grpc.MaxConcurrentStreams(uint32(streams)),
		grpc.ConnectionTimeout(handshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: idleTimeout, Time: keepaliveTime, Timeout: keepaliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval, PermitWithoutStream: true}),
	)
	idallocv1.RegisterIDAllocatorServer(s.gs, s)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.gs, s.health)
	reflection.Register(s.gs)
	// Once now, so that the health service is accurate from the first
	// call, as /health is.
	s.setHealth(context.Background())
	if s.admin == "" {
		s.log.Warn("no admin_token configured: gRPC admin calls are served to loopback peers only")
	}
	return s, nil
}

// Serve answers on ln, under MaxConns connections, until ctx is done,
// then drains: the health service answers NOT_SERVING at once, and ln and
// the open connections are served for drain, new connections included,
// as HTTP serves them; then the streams still open end (UNAVAILABLE, kind
// draining), ln is closed, every connection is sent a GOAWAY and closed
// as its calls finish. Those still busy shutdownTimeout later, or when
// Cut is called, are cut. Serve returns nil once every connection has
// ended, or gRPC's error if serving fails. It leaves the dependencies
// open. A Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("grpcapi: a Server serves once")
	}
	capped := limit(ln, s.maxConns, s.m, s.log)
	hctx, stopHealth := context.WithCancel(context.Background())
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		s.checkHealth(hctx)
	}()
	served := make(chan error, 1)
	go func() { served <- s.gs.Serve(capped) }()

	var err error
	select {
	case err = <-served:
		// Failed serving: stop what it started.
		s.gs.Stop()
		stopHealth()
		<-checked
		return err
	case <-ctx.Done():
	case <-s.cutC:
	}
	stopHealth()
	<-checked
	s.health.Shutdown() // NOT_SERVING for every service, from now on
	s.log.Info("grpc: draining: health NOT_SERVING, calls served", "for", drain)
	timer := time.NewTimer(drain)
	select {
	case <-timer.C:
	case <-s.cutC:
	}
	timer.Stop()
	s.drainOnce.Do(func() { close(s.drained) })
	graceful := make(chan struct{})
	go func() {
		s.gs.GracefulStop()
		close(graceful)
	}()
	timer = time.NewTimer(shutdownTimeout)
	select {
	case <-graceful:
	case <-timer.C:
		s.log.Warn("grpc: calls still in progress at the shutdown timeout: closing their connections")
		s.Cut()
	case <-s.cutC:
	}
	timer.Stop()
	<-graceful
	return <-served
}

// Cut closes every connection now, ending calls in progress (their
// contexts are cancelled). The stop sequence calls it when connections
// outlive their share of shutdown_timeout.
func (s *Server) Cut() {
	s.cutOnce.Do(func() {
		close(s.cutC)
		s.drainOnce.Do(func() { close(s.drained) })
		s.gs.Stop()
	})
}

// checkHealth sets the health service's status from the store's pings
// and the IDs buffered, as /health judges them, every healthInterval
// until ctx is done.
func (s *Server) checkHealth(ctx context.Context) {
	t := time.NewTicker(s.healthInterval)
	defer t.Stop()
	for {
		s.setHealth(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// setHealth pings the store once: SERVING while it answers, or while IDs
// remain buffered (/health's "degraded"), else NOT_SERVING.
func (s *Server) setHealth(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, s.healthInterval)
	err := s.store.Ping(pctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	st := healthpb.HealthCheckResponse_SERVING
	if err != nil && s.seg.TotalBuffered() == 0 {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	for _, svc := range services {
		s.health.SetServingStatus(svc, st)
	}
}

// services are the names the health service answers for: the server as a
// whole, and the one service.
var services = []string{"", ServiceName}
