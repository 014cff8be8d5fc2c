package server

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// admin guards h: with an admin token, the request must carry it as a
// bearer token; without one, it must come from a loopback address. Behind a
// reverse proxy on the same host every client looks local, which is why New
// warns when no token is set.
func (s *Server) admin(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) int {
		if s.adminToken == "" {
			if !fromLoopback(r) {
				return s.fail(w, r, errLoopbackOnly)
			}
			return h(w, r)
		}
		token, ok := bearerToken(r.Header.Get("Authorization"))
		// ConstantTimeCompare leaks only the length, which a token of
		// adequate length can afford.
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.adminToken)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="idalloc"`)
			return s.fail(w, r, errUnauthorized)
		}
		return h(w, r)
	}
}

// bearerToken is the credentials of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 9110 11.1).
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return token, true
}

// fromLoopback reports whether the peer is 127.0.0.0/8 or ::1 (also as an
// IPv4-mapped address). It reads RemoteAddr, never a forwarding header a
// client could forge.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
