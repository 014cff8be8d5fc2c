package resp

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// instance is the front end as main wires it: a real SQLite store in a
// temporary directory, the real segment allocator, and a snowflake source
// under a worker lease the real keeper holds; served on a TCP port of
// 127.0.0.1.
type instance struct {
	addr  string
	store *store.SQLite
	alloc *segment.Allocator
	srv   *Server
	reg   *prometheus.Registry
	// admin makes and revokes the per-tag tokens the front end's guard
	// checks, when options.tokens asked for them.
	admin *access.Admin
	// stop starts the drain (as SIGTERM does); served then reports Serve's
	// return.
	stop   context.CancelFunc
	served chan error
}

// options tune start; the zero value serves with defaults, no admin
// token, and no drain.
type options struct {
	cfg     Config
	drain   time.Duration
	noFlake bool
	// tokens gives the front end a guard on the store's tokens and an
	// audit log, as main does: cfg.AllocAuth says whether ID commands
	// need a token.
	tokens bool
	// listen wraps the listener Serve is given, to observe connections.
	listen func(net.Listener) net.Listener
}

// start serves a fresh instance until tb's cleanup, which drains it and
// closes everything in main's order: the front end, the lease, the
// allocator (which gives its unused IDs back), the store.
func start(tb testing.TB, o options) *instance {
	tb.Helper()
	ctx := context.Background()
	st, alloc := frontendtest.SQLiteDomain(tb)
	in := &instance{store: st, alloc: alloc, reg: prometheus.NewRegistry()}
	cfg := o.cfg
	var err error
	if cfg.Metrics, err = NewMetrics(in.reg); err != nil {
		tb.Fatal(err)
	}
	deps := Deps{Segments: alloc}
	if !o.noFlake {
		_, deps.Snowflake = startLease(tb, st)
	}
	if o.tokens {
		guard, err := access.NewGuard(ctx, st, access.Config{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = guard.Close() })
		if in.admin, err = access.NewAdmin(st, segment.ValidTag, guard, cfg.AdminToken); err != nil {
			tb.Fatal(err)
		}
		deps.Guard, deps.Audit = guard, in.admin
	}
	if in.srv, err = New(cfg, deps); err != nil {
		tb.Fatal(err)
	}
	s := frontendtest.ServeDraining(tb, in.srv, o.drain, o.listen)
	in.addr, in.stop, in.served = s.Addr, s.Stop, s.Served
	return in
}

// startLease takes a worker lease of st with the real keeper and returns it
// with its source once the lease is held.
func startLease(tb testing.TB, st *store.SQLite) (*workerlease.Keeper, *leased.Source) {
	tb.Helper()
	svc, err := workerlease.NewService(st, workerlease.Config{Holder: "resp-test"})
	if err != nil {
		tb.Fatal(err)
	}
	return frontendtest.StartLease(tb, svc)
}

// rawConn is a connection for bytes the clients would not send.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(tb testing.TB, addr string) *rawConn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// send writes s and reads one reply line (a bulk string's header only).
func (c *rawConn) send(tb testing.TB, s string) string {
	tb.Helper()
	_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(s)); err != nil {
		tb.Fatalf("write: %v", err)
	}
	return c.line(tb)
}

// line reads one CRLF-terminated line, without its CRLF.
func (c *rawConn) line(tb testing.TB) string {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := c.r.ReadString('\n')
	if err != nil {
		tb.Fatalf("read a reply: %v (got %q)", err, l)
	}
	return l[:max(0, len(l)-2)]
}

// closed reports whether the server closed the connection: the next read
// ends with EOF (or a reset) rather than data or a timeout.
func (c *rawConn) closed(tb testing.TB) bool {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.r.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// adminClient serves a Server with an admin token on a fresh store of d,
// with frontendtest's domain on it, and returns the store, the domain and a
// client that has authenticated with the token.
func adminClient(t *testing.T, d storetest.Driver) (store.Store, frontendtest.Domain, *redis.Client) {
	t.Helper()
	st := d.Open(t)
	dom := frontendtest.Open(t, st)
	srv, err := New(Config{AdminToken: token}, Deps{Segments: dom.Segments})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: frontendtest.Serve(t, srv), Password: token})
	t.Cleanup(func() { _ = rdb.Close() })
	return st, dom, rdb
}
