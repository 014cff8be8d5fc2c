package grpcapi

import (
	"context"
	"crypto/subtle"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// Tokens travel in the metadata "authorization: Bearer <token>"
// (docs/api.md §14): the admin token for the admin calls, a per-tag token
// for the ID calls with alloc_auth on. HTTP's refusals of what a browser
// sends for another site (Origin, Sec-Fetch-Site, a rebound Host) have no
// counterpart here: a browser speaks no cleartext HTTP/2, so no web page
// can make a gRPC call to this port.

// token is the bearer token of ctx's call, "" when it sends none (or a
// header of another scheme); the scheme's case does not matter (RFC 9110
// 11.1).
func token(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, h := range md.Get("authorization") {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return tok
		}
	}
	return ""
}

// authorizeAdmin is nil when ctx's call may make an admin call: with an
// admin token, the call must carry it; without one, it must come from a
// loopback peer.
func (s *Server) authorizeAdmin(ctx context.Context) error {
	if s.admin != "" {
		// ConstantTimeCompare leaks only the length, which a token of
		// adequate length can afford.
		if subtle.ConstantTimeCompare([]byte(token(ctx)), []byte(s.admin)) != 1 {
			return errUnauthorized
		}
		return nil
	}
	if !fromLoopback(ctx) {
		return errLoopbackOnly
	}
	return nil
}

// authorizeListing guards the calls that list tags (GetTag, ListTags) as
// HTTP guards GET /tags: as an admin call when an admin token is set or
// alloc_auth is on (they name every tag, which no tag token may see),
// open otherwise.
func (s *Server) authorizeListing(ctx context.Context) error {
	if s.admin == "" && s.guard == nil {
		return nil
	}
	return s.authorizeAdmin(ctx)
}

// allowTag is nil when ctx's call may take IDs of tag (docs/api.md §12):
// with alloc_auth on, its token must be one the guard allows tag; tag ""
// is for snowflake IDs, which any valid token may take. Every ID call
// makes it before anything is taken, so a refused call costs no ID.
func (s *Server) allowTag(ctx context.Context, tag string) error {
	if s.guard == nil {
		return nil
	}
	if tag == "" {
		return s.guard.AllowAny(token(ctx))
	}
	return s.guard.Allow(token(ctx), tag)
}

// fromLoopback reports whether ctx's peer is 127.0.0.0/8 or ::1 (also as
// an IPv4-mapped address), from the socket, never from metadata.
func fromLoopback(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return false
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// peerAddr is ctx's peer's address, for the audit log and lease holders.
func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}

// caller is who makes an admin call, for the audit log: how it was let in
// and its address, as HTTP writes it.
func (s *Server) caller(ctx context.Context) string {
	if s.admin != "" {
		return "admin-token " + peerAddr(ctx)
	}
	return "loopback " + peerAddr(ctx)
}
