package server

import "net/http"

// allowTag is nil when r may take IDs of tag, else why not (docs/api.md §12):
// with alloc_auth on, the token r carries (an Authorization: Bearer
// header, or Tinyid's token= parameter among params, the raw query the
// route reads its parameters from) must be one the guard allows tag;
// tag "" is for the ID calls that name no tag (snowflake IDs), which any
// valid token may make. Every ID route calls it before anything is taken,
// so a refused call costs no ID. With alloc_auth off it is one nil check,
// inlined, and allocates nothing.
func (s *Server) allowTag(r *http.Request, params, tag string) error {
	if s.guard == nil {
		return nil
	}
	return s.checkToken(r, params, tag)
}

// checkToken is allowTag's check with alloc_auth on. A header of another
// scheme (Basic) carries no token.
func (s *Server) checkToken(r *http.Request, params, tag string) error {
	var token string
	if h := r.Header.Get("Authorization"); h != "" {
		token, _ = bearerToken(h)
	} else {
		var err error
		if token, _, err = queryParam(params, "token"); err != nil {
			return err
		}
	}
	if tag == "" {
		return s.guard.AllowAny(token)
	}
	return s.guard.Allow(token, tag)
}

// allowTagInfo is nil when r may read what this instance knows of tag (the
// IDs it buffers: /health?app_tag=), else why not (docs/api.md §15): with
// alloc_auth on, a token allowed tag or admin rights (the admin token, or
// loopback without one). The tag is not looked up first, so an unknown tag
// is refused exactly as a forbidden one.
func (s *Server) allowTagInfo(r *http.Request, tag string) error {
	if s.guard == nil || s.authorizeAdmin(r) == nil {
		return nil
	}
	return s.checkToken(r, r.URL.RawQuery, tag)
}
