package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/idalloc/idalloc/access"
)

// Guard is what the server needs of access.Guard: whether a token may
// take IDs of a tag (Allow), or of the calls that name none (AllowAny),
// answered from memory with access's refusals (kinds unauthorized and
// forbidden).
type Guard interface {
	Allow(token, tag string) error
	AllowAny(token string) error
}

// Tokens is what the server needs of access.Admin: the admin calls on
// tokens and the audit log. Their refusals are access's *errs.Error
// values; caller is who asked, as the audit log records it.
type Tokens interface {
	Create(ctx context.Context, caller string, n access.NewToken) (secret string, tags []string, err error)
	List(ctx context.Context) ([]access.Token, error)
	Revoke(ctx context.Context, caller, name string) error
	// Note records an admin change made here (a tag created or changed)
	// and logs a failure to log: the change stands either way.
	Note(ctx context.Context, log *slog.Logger, c access.Change)
	Log(ctx context.Context, limit int) ([]access.Entry, error)
}

// errNoTokens answers /tokens and /audit on a server built without them.
var errNoTokens = errors.New("per-tag tokens not served")

// caller is who made an admin call, for the audit log: how it was let in
// (with the admin token, or as a loopback client without one) and its
// address as the connection shows it.
func (s *Server) caller(r *http.Request) string {
	if s.adminToken != "" {
		return "admin-token " + r.RemoteAddr
	}
	return "loopback " + r.RemoteAddr
}

// record writes an admin change made through r to the audit log; a
// failure is logged with the request's ID, not answered (access.Admin.Note).
func (s *Server) record(r *http.Request, action access.Action, subject string, detail any) {
	if s.tokens == nil {
		return
	}
	s.tokens.Note(r.Context(), s.log.With("request_id", s.requestID(r)),
		access.Change{Caller: s.caller(r), Action: action, Subject: subject, Detail: detail})
}

// handleCreateToken serves POST /tokens (admin): {"name","app_tags"} and
// an optional chosen "token", answered 201 with the token, shown this
// once.
func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) int {
	if s.tokens == nil {
		return s.fail(w, r, errNoTokens)
	}
	o, err := readObject(w, r, "name", "app_tags", "token")
	if err != nil {
		return s.fail(w, r, err)
	}
	name, ok, err := o.string("name")
	switch {
	case err != nil:
		return s.fail(w, r, err)
	case !ok:
		return s.fail(w, r, missingParam("name"))
	}
	tags, ok, err := o.strings("app_tags")
	switch {
	case err != nil:
		return s.fail(w, r, err)
	case !ok:
		return s.fail(w, r, missingParam("app_tags"))
	}
	chosen, _, err := o.string("token")
	if err != nil {
		return s.fail(w, r, err)
	}
	secret, tags, err := s.tokens.Create(r.Context(), s.caller(r), access.NewToken{Name: name, AppTags: tags, Secret: chosen})
	if err != nil {
		return s.fail(w, r, err)
	}
	s.log.Info("token created", "name", name, "app_tags", tags)
	return s.sendJSON(w, r, http.StatusCreated, struct {
		envelope
		Name    string   `json:"name"`
		Token   string   `json:"token"`
		AppTags []string `json:"app_tags"`
	}{success, name, secret, tags})
}

// tokenJSON is one token of GET /tokens: never its secret or hash.
type tokenJSON struct {
	Name      string   `json:"name"`
	AppTags   []string `json:"app_tags"`
	CreatedAt string   `json:"created_at"`
}

// handleListTokens serves GET /tokens (admin).
func (s *Server) handleListTokens(w http.ResponseWriter, r *http.Request) int {
	if s.tokens == nil {
		return s.fail(w, r, errNoTokens)
	}
	toks, err := s.tokens.List(r.Context())
	if err != nil {
		return s.fail(w, r, err)
	}
	out := make([]tokenJSON, len(toks))
	for i, t := range toks {
		out[i] = tokenJSON{Name: t.Name, AppTags: t.AppTags, CreatedAt: formatTime(t.CreatedAt)}
	}
	return s.sendJSON(w, r, http.StatusOK, struct {
		envelope
		Tokens []tokenJSON `json:"tokens"`
	}{success, out})
}

// handleRevokeToken serves DELETE /tokens/{name} (admin).
func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) int {
	if s.tokens == nil {
		return s.fail(w, r, errNoTokens)
	}
	name := chi.URLParam(r, "name")
	if err := s.tokens.Revoke(r.Context(), s.caller(r), name); err != nil {
		return s.fail(w, r, err)
	}
	s.log.Info("token revoked", "name", name)
	return s.sendJSON(w, r, http.StatusOK, struct {
		envelope
		Name string `json:"name"`
	}{success, name})
}

// auditJSON is one entry of GET /audit; detail is the JSON object the
// entry holds, or its text if a hand-edited row holds something else.
type auditJSON struct {
	ID      int64           `json:"id"`
	At      string          `json:"at"`
	Caller  string          `json:"caller"`
	Action  string          `json:"action"`
	Subject string          `json:"subject"`
	Detail  json.RawMessage `json:"detail"`
}

// handleAudit serves GET /audit[?limit=N] (admin): the newest entries
// first, access.DefaultAuditLimit of them unless limit says how many (at
// most access.MaxAuditLimit).
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) int {
	if s.tokens == nil {
		return s.fail(w, r, errNoTokens)
	}
	limit, err := limitParam(r.URL.RawQuery)
	if err != nil {
		return s.fail(w, r, err)
	}
	es, err := s.tokens.Log(r.Context(), limit)
	if err != nil {
		return s.fail(w, r, err)
	}
	out := make([]auditJSON, len(es))
	for i, e := range es {
		detail := json.RawMessage(e.Detail)
		if !json.Valid(detail) {
			detail, _ = json.Marshal(e.Detail) // a string always marshals
		}
		out[i] = auditJSON{ID: e.ID, At: formatTime(e.At), Caller: e.Caller, Action: string(e.Action), Subject: e.Subject, Detail: detail}
	}
	return s.sendJSON(w, r, http.StatusOK, struct {
		envelope
		Entries []auditJSON `json:"entries"`
	}{success, out})
}

// limitParam reads GET /audit's optional limit: absent is 0 (the
// domain's default); otherwise decimal digits alone, whose range is the
// domain's to judge (access.ErrInvalidLimit, as is anything not a number).
func limitParam(raw string) (int, error) {
	v, found, err := queryParam(raw, "limit")
	if !found || err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || spelledOddly(v) || n == 0 {
		return 0, access.ErrInvalidLimit
	}
	return n, nil
}
