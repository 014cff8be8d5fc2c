package grpcapi

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"

	"github.com/idalloc/idalloc/frontend"
)

// The connection cap is every front end's (frontend.Limiter). gRPC owns
// its connections, so this file tells the Limiter what each is doing from
// the hooks gRPC offers: a new connection is incomplete from its accept
// (the credentials' handshake, which gRPC runs first) until its HTTP/2
// preface is read (the stats handler's TagConn); then idle, and busy
// while it has calls in progress (the interceptors, calls).

// refusal is what a connection refused at the cap is sent: HTTP/2's
// server preface (an empty SETTINGS frame), then a GOAWAY with
// ENHANCE_YOUR_CALM saying why in its debug data. A gRPC client retries
// its call on a new connection, as for any GOAWAY before its stream was
// served, and reports UNAVAILABLE when it gives up: the code HTTP's 503
// with Retry-After is, which sends a client to another instance.
var refusal = func() []byte {
	const why = "too many connections: grpc_max_conns are open, each in a call; retry shortly, on another instance if you have one"
	b := []byte{0, 0, 0, 0x4, 0, 0, 0, 0, 0} // SETTINGS, no settings
	b = append(b, byte((8+len(why))>>16), byte((8+len(why))>>8), byte(8+len(why)), 0x7, 0, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 0)   // last stream ID
	b = binary.BigEndian.AppendUint32(b, 0xb) // ENHANCE_YOUR_CALM
	return append(b, why...)
}()

// limit caps the connections accepted from ln.
func limit(ln net.Listener, max int, m *Metrics, log *slog.Logger) *frontend.Limiter {
	return frontend.Limit(ln, frontend.Cap{Max: max, Refusal: refusal, Metrics: m.conns, Log: log})
}

// conn is what the Limiter is told of one connection: the calls in
// progress on it, under mu so that the marks follow the count's order.
type conn struct {
	c      net.Conn
	mu     sync.Mutex
	active int
}

// begin counts a call begun on c: the connection is busy.
func (c *conn) begin() {
	c.mu.Lock()
	c.active++
	if c.active == 1 {
		frontend.SetIdle(c.c, false)
	}
	c.mu.Unlock()
}

// end counts a call ended on c: with none left, the connection is idle.
func (c *conn) end() {
	c.mu.Lock()
	c.active--
	if c.active == 0 {
		frontend.SetIdle(c.c, true)
	}
	c.mu.Unlock()
}

// connInfo carries a connection's conn to the hooks, as the peer's
// AuthInfo (peer.FromContext), with the security level of insecure
// credentials, which it otherwise is.
type connInfo struct {
	credentials.CommonAuthInfo
	conn *conn
}

func (connInfo) AuthType() string { return "insecure" }

// connOf is ctx's connection, nil for a context of no connection of
// ours.
func connOf(ctx context.Context) *conn {
	if p, ok := peer.FromContext(ctx); ok {
		if ci, ok := p.AuthInfo.(connInfo); ok {
			return ci.conn
		}
	}
	return nil
}

// connCreds are insecure credentials (cleartext HTTP/2, as
// insecure.NewCredentials) that mark a new connection incomplete, and
// give it its conn.
type connCreds struct{}

var errClientSide = errors.New("grpcapi: connCreds are the server's")

func (connCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	// Counted from the accept: a slow preface is the handshake's own
	// timeout's, and at the cap the Limiter's first victim.
	frontend.Begin(raw, time.Now())
	return raw, connInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, conn: &conn{c: raw}}, nil
}

func (connCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errClientSide
}

func (connCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "insecure"}
}

func (c connCreds) Clone() credentials.TransportCredentials { return c }

// OverrideServerName is the interface's; a server has no name to check.
func (connCreds) OverrideServerName(string) error { return nil }

// connStats marks a connection idle once its HTTP/2 preface is read: it
// has no call in progress yet.
type connStats struct{}

func (connStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	if c := connOf(ctx); c != nil {
		c.mu.Lock()
		if c.active == 0 {
			frontend.SetIdle(c.c, true)
		}
		c.mu.Unlock()
	}
	return ctx
}

func (connStats) HandleConn(context.Context, stats.ConnStats)                     {}
func (connStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connStats) HandleRPC(context.Context, stats.RPCStats)                       {}
