package server

import (
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// admin guards h (docs/api.md §2, "Admin protection"). A request a browser
// made on behalf of another site is refused first, in either mode: a
// loopback peer or a valid-looking request is no proof that the operator
// meant it. Then, with an admin token, the request must carry it as a
// bearer token; without one, it must come from a loopback address and
// name a loopback host. Behind a reverse proxy on the same host every
// client looks local, which is why New warns when no token is set.
func (s *Server) admin(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) int {
		if err := s.authorizeAdmin(r); err != nil {
			if errors.Is(err, errUnauthorized) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="idalloc"`)
			}
			return s.fail(w, r, err)
		}
		return h(w, r)
	}
}

// adminIfToken guards h like admin when an admin token is set and leaves
// it open otherwise, as the contract has it for GET /tags: the list is
// the operator's business once there is an operator's token to ask for.
// With alloc_auth on it is guarded either way (loopback without a token):
// its answers name every tag and its figures, which no tag token may see
// (docs/api.md §15).
func (s *Server) adminIfToken(h handlerFunc) handlerFunc {
	if s.adminToken == "" && s.guard == nil {
		return h
	}
	return s.admin(h)
}

// authorizeAdmin is nil when r may make an admin call, else the reason.
func (s *Server) authorizeAdmin(r *http.Request) error {
	if err := fromOtherSite(r); err != nil {
		return err
	}
	if s.adminToken != "" {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		// ConstantTimeCompare leaks only the length, which a token of
		// adequate length can afford.
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.adminToken)) != 1 {
			return errUnauthorized
		}
		return nil
	}
	if !fromLoopback(r) {
		return errLoopbackOnly
	}
	// A page whose name was rebound to 127.0.0.1 (DNS rebinding) reaches
	// us from loopback, same-origin to itself, but its Host is its own
	// name: only a loopback Host proves the client meant this machine.
	if !loopbackHost(r.Host) {
		return errForeignHost
	}
	return nil
}

// fromOtherSite refuses what browsers say came from another site. Only
// browsers send Sec-Fetch-Site and Origin, and a page cannot forge them
// (they are forbidden request headers), so a client that sends neither,
// such as curl, passes. "none" is the operator's own doing (typed in the
// address bar); "same-site" is still another origin, a sibling subdomain
// perhaps, and is refused.
func fromOtherSite(r *http.Request) error {
	for _, v := range r.Header.Values("Sec-Fetch-Site") {
		if !strings.EqualFold(v, "same-origin") && !strings.EqualFold(v, "none") {
			return errCrossSite
		}
	}
	for _, origin := range r.Header.Values("Origin") {
		if !sameOrigin(origin, r) {
			return errCrossOrigin
		}
	}
	return nil
}

// sameOrigin reports whether origin (scheme://host[:port], RFC 6454) is
// r's own origin as served: its scheme, and its Host with the scheme's
// default port made explicit on both sides. An opaque origin ("null",
// sent by sandboxed frames, data: URLs and some redirects) matches
// nothing, and neither does anything with a path or user info, which no
// browser sends. Behind a proxy that ends TLS the request is served as
// http, so an https page is another origin even under the same name: that
// refuses a browser, never curl.
func sameOrigin(origin string, r *http.Request) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	got, hostport, ok := strings.Cut(origin, "://")
	if !ok || !strings.EqualFold(got, scheme) || hostport == "" {
		return false
	}
	return strings.EqualFold(withDefaultPort(hostport, scheme), withDefaultPort(r.Host, scheme))
}

// withDefaultPort adds the scheme's default port to a host without one, so
// "localhost" and "localhost:80" compare equal over http.
func withDefaultPort(hostport, scheme string) string {
	if _, hasPort := splitPort(hostport); hasPort {
		return hostport
	}
	if scheme == "https" {
		return hostport + ":443"
	}
	return hostport + ":80"
}

// splitPort cuts the port off a Host value: "[::1]:8880" → "[::1]",
// "localhost" → "localhost". A colon inside brackets is part of an IPv6
// address, not a port, and so is anything after a colon that is not
// digits ("localhost:80.evil.example" is not localhost).
func splitPort(hostport string) (host string, hasPort bool) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 || i < strings.LastIndexByte(hostport, ']') {
		return hostport, false
	}
	for _, c := range hostport[i+1:] {
		if c < '0' || c > '9' {
			return hostport, false
		}
	}
	return hostport[:i], true
}

// loopbackHost reports whether a Host value, with any port, names this
// machine's loopback: "localhost" (in any case, with or without the
// root's trailing dot), an address in 127.0.0.0/8, or [::1]. Other names
// that resolve to loopback (*.localhost, /etc/hosts entries) are refused:
// from the request alone we cannot tell them from a rebound name.
// Shorthand IPv4 forms ("127.1") are refused too: browsers send the
// dotted-quad form, and curl users can write it.
func loopbackHost(hostport string) bool {
	host, _ := splitPort(hostport)
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		ip, err := netip.ParseAddr(host[1 : len(host)-1])
		return err == nil && ip.Is6() && ip.Unmap().IsLoopback()
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Is4() && ip.IsLoopback()
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
