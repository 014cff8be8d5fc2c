// Package resp is idalloc's Redis-protocol front end (docs/api.md §6): any Redis
// client (redis-cli, go-redis, redis-py, ioredis, Jedis) takes segment IDs
// with GET, INCR, MGET and IDS, snowflake IDs with SNOWFLAKE, creates tags
// with HSET and reads a tag's figures with INFO, on the same allocator,
// snowflake source, formats, admin rules and guarantees as the HTTP API;
// number-dispenser's users list tags with KEYS and read a tag's settings
// with HGETALL (keys.go). AUTH takes the admin token or a per-tag token
// (docs/api.md §12), which, with alloc_auth on, every ID command needs.
//
// Like package server it is an adapter: it parses its wire format, calls
// the domain packages, which own the rules and the words, and maps their
// errors by Kind to a RESP error class in one table (errors.go): ERR,
// NOAUTH or TRYAGAIN, followed by the domain's message as HTTP sends it.
//
// The wire is github.com/tidwall/redcon: it reads RESP2 and inline
// commands, calls the handler once per command, and flushes the answers
// once per batch of pipelined commands (what one read brought), so a
// pipeline of 10,000 GETs costs a few dozen writes, not 10,000. What redcon
// lacks is added around its reader and writer (conn.go, frame.go,
// output.go): the limits on argument size, argument count and command
// size, a bound on the time a command takes to arrive once begun
// (CommandTimeout), refusing bytes that are not RESP, the caps on answers
// waiting for clients that do not read them (MaxPending per connection,
// with a write deadline, and MaxPendingTotal across them), and a drain
// that keeps open connections while the listener is closed. The
// connection cap is every front end's (frontend.Limiter); this package
// tells it which connections are idle, and which are partway through a
// command.
//
// The hot path (GET) claims an ID with one atomic add in the allocator and
// appends its digits to redcon's output buffer: it allocates nothing of its
// own; redcon allocates the command's copy and its argument slice. A dated
// tag's IDs (docs/api.md §11) are answered by GET, MGET and IDS as the text its
// format writes ("ORD-20261126-000123"), allocating nothing either
// (text.go); INFO tag shows its current period.
package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/segment"
)

// Defaults for zero Config fields.
const (
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultStep is the step of a tag created by HSET without one: HTTP's
	// POST /tags requires it, but number-dispenser's HSET has no such
	// field. The allocator's adaptive step grows it under load.
	DefaultStep = 1000
)

// shutdownTimeout bounds how long Serve waits, once the drain is over, for
// connections busy with a batch to finish it; then they are cut. It is the
// HTTP server's too.
const shutdownTimeout = 10 * time.Second

// Segments is what the front end needs of segment.Allocator. Next, NextN,
// Buffered and CreateTag refuse an invalid tag (and CreateTag any invalid
// field) with an *errs.Error, as they answer unknown tags, exhaustion and
// outages; anything else is answered as an internal error.
//
// A dated tag whose IDs are text (a prefix or a separator, docs/api.md §11) is
// refused by Next and NextN with segment.ErrTextOnly before anything is
// claimed; AppendNextText and NextTextN serve its IDs as text (and any
// other tag's, in decimal).
type Segments interface {
	Next(ctx context.Context, tag string) (int64, error)
	NextN(ctx context.Context, tag string, dst []int64) error
	AppendNextText(ctx context.Context, tag string, dst []byte) ([]byte, error)
	NextTextN(ctx context.Context, tag string, buf []int64) (segment.TextBatch, error)
	Buffered(tag string) (int64, error)
	Stats() []segment.TagStats
	// Tags lists the tags as of the last tag-list reload, sorted by
	// AppTag; the slice is shared and must not be modified.
	Tags() []segment.Tag
	// TagPage is a page of that list (KEYS).
	TagPage(q segment.PageQuery) segment.Page
	CreateTag(ctx context.Context, t segment.NewTag) (segment.Tag, error)
}

// Snowflakes is what the front end needs of leased.Source. Errors:
// workerlease.ErrNoWorkerID before a lease is held, and the snowflake
// package's ErrFenced, ErrClockDriftTryLater, ErrClockDriftTooLargeToRecover.
type Snowflakes interface {
	Next() (int64, error)
	NextN(dst []int64) error
}

// Guard is what the front end needs of access.Guard: whether a token may
// take IDs of a tag (Allow), or of SNOWFLAKE, which names none, and
// whether AUTH was sent a token at all (AllowAny), answered from memory
// with access's refusals (kinds unauthorized and forbidden).
type Guard interface {
	Allow(token, tag string) error
	AllowAny(token string) error
}

// Auditor is what the front end needs of access.Admin: the audit log of
// the admin changes made here (HSET's tags).
type Auditor interface {
	Note(ctx context.Context, log *slog.Logger, c access.Change)
}

// Deps are the front end's collaborators. Segments is required.
type Deps struct {
	Segments Segments
	// Snowflake serves SNOWFLAKE; nil answers it with an error.
	Snowflake Snowflakes
	// Guard knows the per-tag tokens: AUTH takes one, and with
	// Config.AllocAuth on (which requires a Guard) every ID command needs
	// one allowed its tag. nil: AUTH takes the admin token only.
	Guard Guard
	// Audit records the tags HSET creates; nil records nothing.
	Audit Auditor
}

// Config tunes a Server. Zero values mean the documented defaults.
type Config struct {
	// AdminToken guards HSET and KEYS: a connection gets admin rights by
	// AUTH with it. Empty means they are served to loopback connections
	// only.
	AdminToken string
	// AllocAuth makes GET, INCR, MGET, IDS and SNOWFLAKE need a per-tag
	// token, sent by AUTH, that Deps.Guard allows the tag (docs/api.md §12),
	// checked at every command, so that a revocation holds within the
	// guard's refresh on connections already open.
	AllocAuth bool
	// MaxBatch is the largest count of IDS and SNOWFLAKE; 0 means
	// segment.DefaultMaxBatch.
	MaxBatch int
	// MaxConns caps the open connections (resp_max_conns); 0 means
	// frontend.DefaultMaxConns. At the cap a connection partway through a
	// command for over 250 ms, else the one idle the longest (waiting
	// for a command with no answer owed), else the one partway through a
	// command the longest, is closed to make room; with every one busy a
	// new connection is answered Redis's "-ERR max number of clients
	// reached" and closed. See frontend.Limiter.
	MaxConns int
	// IdleTimeout closes a connection that sends nothing for so long; 0
	// means 5 minutes.
	IdleTimeout time.Duration
	// CommandTimeout bounds a command once begun (resp_command_timeout):
	// a connection whose command is still incomplete so long after its
	// first bytes arrived is answered an error and closed. 0 means
	// frontend.DefaultCommandTimeout.
	CommandTimeout time.Duration
	// MaxPending caps the bytes of answers a connection may have waiting
	// for its client to read them (resp_max_pending); past it the
	// connection is closed and counted. 0 means
	// frontend.DefaultMaxPending (8 MiB).
	MaxPending int
	// MaxPendingTotal caps the bytes of answers waiting across all
	// connections (resp_max_pending_total); when an answer would pass it,
	// the connection holding the most is closed and counted. 0 means
	// frontend.DefaultMaxPendingTotal (32 MiB); below MaxPending is an error.
	MaxPendingTotal int64
	// Version is what INFO and HELLO say this build is.
	Version string
	// Logger receives internal errors and the drain; nil discards.
	Logger *slog.Logger
	// Metrics is where the front end counts; nil makes a registry of its
	// own (for tests). Give each Server its own Metrics.
	Metrics *Metrics
}

// Server answers the Redis protocol. It starts goroutines only in Serve
// (redcon's accept loop and one per connection), and Serve returns once
// they have all ended.
type Server struct {
	seg   Segments
	flake Snowflakes
	guard Guard
	audit Auditor
	// allocAuth: ID commands need a token the guard allows (allowTag).
	allocAuth bool
	metrics   *Metrics
	log       *slog.Logger
	admin     string
	// adminBytes is admin, for AUTH's constant-time compare.
	adminBytes []byte
	count      segment.CountLimit // of IDS and SNOWFLAKE
	maxConns   int
	maxPending int
	// maxPendingTotal is Config.MaxPendingTotal, shared by the connections
	// of Serve's listener.
	maxPendingTotal int64
	idle            time.Duration
	commandTimeout  time.Duration
	version         string
	started         time.Time

	// ctx is what allocator calls wait under; cut cancels it so that a
	// command waiting for a segment fetch returns when connections are cut.
	ctx    context.Context
	cancel context.CancelFunc
	cutC   chan struct{}
	cutMu  sync.Mutex
	ln     *listener // while serving, for INFO's connected_clients
	nextID int64     // connection IDs, under cutMu
}

// New checks cfg and deps. Errors: a nil Segments, AllocAuth without a
// Guard, a negative MaxBatch, MaxConns, IdleTimeout, CommandTimeout,
// MaxPending or MaxPendingTotal, a MaxPendingTotal below MaxPending
// (defaults included).
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Segments == nil {
		return nil, errors.New("resp: Deps.Segments is required")
	}
	if cfg.AllocAuth && deps.Guard == nil {
		return nil, errors.New("resp: Config.AllocAuth needs Deps.Guard")
	}
	if cfg.MaxBatch < 0 || cfg.MaxConns < 0 || cfg.IdleTimeout < 0 || cfg.CommandTimeout < 0 || cfg.MaxPending < 0 || cfg.MaxPendingTotal < 0 {
		return nil, errors.New("resp: MaxBatch, MaxConns, IdleTimeout, CommandTimeout, MaxPending and MaxPendingTotal must not be negative")
	}
	s := &Server{
		seg: deps.Segments, flake: deps.Snowflake, guard: deps.Guard, audit: deps.Audit, allocAuth: cfg.AllocAuth,
		metrics: cfg.Metrics, log: cfg.Logger, admin: cfg.AdminToken,
		count:           segment.NewCountLimit(cfg.MaxBatch),
		maxConns:        orDefault(cfg.MaxConns, frontend.DefaultMaxConns),
		maxPending:      orDefault(cfg.MaxPending, frontend.DefaultMaxPending),
		maxPendingTotal: orDefault(cfg.MaxPendingTotal, frontend.DefaultMaxPendingTotal),
		idle:            orDefault(cfg.IdleTimeout, DefaultIdleTimeout),
		commandTimeout:  orDefault(cfg.CommandTimeout, frontend.DefaultCommandTimeout),
		version:         cfg.Version, started: time.Now(),
		cutC: make(chan struct{}),
	}
	if s.version == "" {
		s.version = "(devel)"
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		m, err := NewMetrics(prometheus.NewRegistry())
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	if s.maxPendingTotal < int64(s.maxPending) {
		// One connection could then not hold what MaxPending allows it.
		return nil, fmt.Errorf("resp: MaxPendingTotal %d is below MaxPending %d", s.maxPendingTotal, s.maxPending)
	}
	s.adminBytes = []byte(s.admin)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.admin == "" {
		s.log.Warn("no admin_token configured: HSET and KEYS over RESP are served to loopback connections only")
	}
	return s, nil
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Serve answers on ln, under MaxConns connections, until ctx is done, then
// drains: ln is closed at once (new connections are refused), the open
// connections are served for drain, then each is closed at its next
// command boundary (at once if it is waiting for a command). Those still
// busy shutdownTimeout later, or when Cut is called, are cut. Serve
// returns nil once every connection has ended, or redcon's error if
// serving fails. It leaves the dependencies open. A Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	capped := frontend.Limit(ln, frontend.Cap{
		Max: s.maxConns, Refusal: errMaxClients, Metrics: s.metrics.conns, Log: s.log,
	})
	l := newListener(capped, s.maxPending, s.maxPendingTotal, s.commandTimeout, s.metrics)
	s.cutMu.Lock()
	s.ln = l
	s.cutMu.Unlock()
	rs := redcon.NewServerNetwork(ln.Addr().Network(), ln.Addr().String(), s.serveCommand, s.accept, s.closed)
	rs.SetIdleClose(s.idle)
	rs.AcceptError = func(err error) { s.log.Warn("resp: accept failed", "err", err) }
	served := make(chan error, 1)
	go func() { served <- rs.Serve(l) }()

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	l.stopAccepting()
	s.log.Info("resp: draining: listener closed, open connections served", "for", drain, "connections", l.open())
	timer := time.NewTimer(drain)
	select {
	case <-timer.C:
	case <-s.cutC:
		timer.Stop()
	}
	l.each((*gateConn).stop)
	timer = time.NewTimer(shutdownTimeout)
	select {
	case <-l.empty():
	case <-timer.C:
		s.log.Warn("resp: connections still busy at the shutdown timeout: closing them", "connections", l.open())
	case <-s.cutC:
	}
	timer.Stop()
	s.Cut()
	// Every connection's goroutine is out of its socket calls now, and out
	// of the allocator within its wait (ctx is cancelled).
	<-l.empty()
	l.release()
	return <-served
}

// Cut closes every open connection now, and makes allocator calls in
// progress return. The stop sequence calls it when the connections outlive
// their share of shutdown_timeout.
func (s *Server) Cut() {
	s.cutMu.Lock()
	defer s.cutMu.Unlock()
	select {
	case <-s.cutC:
		return
	default:
	}
	close(s.cutC)
	s.cancel()
	if s.ln != nil {
		s.ln.each(func(c *gateConn) { _ = c.Conn.Close() })
	}
}

// accept gives a new connection its session.
func (s *Server) accept(c redcon.Conn) bool {
	s.cutMu.Lock()
	s.nextID++
	id := s.nextID
	s.cutMu.Unlock()
	ses := newSession(id, c.RemoteAddr())
	ses.out.Conn = c
	c.SetContext(ses)
	return true
}

// closed is redcon's callback when a connection ends, called under its
// server-wide lock: it only logs refusals of bad input, the output limits
// and the command timeout, at debug level (the limits and the timeout are
// counted in the metrics).
func (s *Server) closed(c redcon.Conn, err error) {
	if pe, ok := errors.AsType[*protocolError](err); ok {
		s.log.Debug("resp: connection closed on bad input", "remote", c.RemoteAddr(), "err", pe)
	} else if errors.Is(err, errOutputLimit) {
		s.log.Debug("resp: connection closed: answers waiting past resp_max_pending", "remote", c.RemoteAddr(), "resp_max_pending", s.maxPending)
	} else if errors.Is(err, errCommandTimeout) {
		s.log.Debug("resp: connection closed: command incomplete at resp_command_timeout", "remote", c.RemoteAddr(), "resp_command_timeout", s.commandTimeout)
	} else if errors.Is(err, errOutputTotal) {
		s.log.Debug("resp: connection closed: it held the most answers waiting when those of all passed resp_max_pending_total", "remote", c.RemoteAddr(), "resp_max_pending_total", s.maxPendingTotal)
	} else if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("resp: connection ended", "remote", c.RemoteAddr(), "err", err)
	}
}

// openConns is the number of open connections, for INFO.
func (s *Server) openConns() int {
	s.cutMu.Lock()
	l := s.ln
	s.cutMu.Unlock()
	if l == nil {
		return 0
	}
	return l.open()
}
