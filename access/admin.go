package access

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Audit log reads: GET /audit's limit when none is given, and the most
// one read returns.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// Admin makes the admin changes to tokens and writes the audit log. It
// holds no state and starts no goroutine.
type Admin struct {
	st         Store
	guard      *Guard
	validTag   func(string) bool
	adminToken []byte
}

// NewAdmin returns the admin calls on st. validTag is the rule every
// app_tag of a token must meet, the segment domain's (segment.ValidTag),
// which this package does not import. guard, if not nil, is this
// instance's Guard: it reloads after each change, so that the change
// holds here at once, not a refresh later. adminToken is the service's
// admin token, which no token may take as its secret ("" when there is
// none, or the caller does not know it). Errors: a nil st or validTag.
func NewAdmin(st Store, validTag func(string) bool, guard *Guard, adminToken string) (*Admin, error) {
	if st == nil || validTag == nil {
		return nil, errors.New("access: NewAdmin needs a Store and the tag rule")
	}
	return &Admin{st: st, guard: guard, validTag: validTag, adminToken: []byte(adminToken)}, nil
}

// NewToken is a token as an admin asks for it.
type NewToken struct {
	Name    string
	AppTags []string
	// Secret is the token chosen by the caller (a Tinyid token carried
	// over); "" makes a random one.
	Secret string
}

// Token is a token as listed: never its secret or hash.
type Token struct {
	Name      string
	AppTags   []string
	CreatedAt time.Time
}

// Create makes the token n asks for and returns its secret, which is
// shown this once: only its hash is kept. caller is who asked, for the
// audit entry written with it. It returns the token's app_tags as kept
// (sorted). Errors: ErrInvalidName, ErrInvalidTags, ErrInvalidToken,
// ErrAdminToken (the chosen secret is the admin token), ErrTokenExists
// (the name is taken) or ErrSecretInUse (the chosen secret is), and the
// store's failures. Nothing is written on any of them.
func (a *Admin) Create(ctx context.Context, caller string, n NewToken) (secret string, tags []string, err error) {
	if !ValidName(n.Name) {
		return "", nil, ErrInvalidName
	}
	if tags, err = a.checkTags(n.AppTags); err != nil {
		return "", nil, err
	}
	secret, chosen := n.Secret, n.Secret != ""
	switch {
	case !chosen:
		secret = newSecret()
	case !validSecret(secret):
		return "", nil, ErrInvalidToken
	case len(a.adminToken) > 0 && subtle.ConstantTimeCompare([]byte(secret), a.adminToken) == 1:
		return "", nil, ErrAdminToken
	}
	st := StoredToken{Name: n.Name, Hash: HashToken(secret), AppTags: tags}
	if err := a.tellTaken(ctx, st); err != nil {
		return "", nil, err
	}
	e := entry(caller, ActionTokenCreate, n.Name, struct {
		AppTags []string `json:"app_tags"`
		Chosen  bool     `json:"chosen_token"`
	}{tags, chosen})
	if err := a.st.CreateToken(ctx, st, e); err != nil {
		return "", nil, fmt.Errorf("create token %q: %w", n.Name, err)
	}
	a.reload(ctx)
	return secret, tags, nil
}

// checkTags returns tags sorted, or the refusal of the first one at
// fault.
func (a *Admin) checkTags(tags []string) ([]string, error) {
	if len(tags) == 0 || len(tags) > MaxTokenTags {
		return nil, ErrInvalidTags
	}
	sorted := slices.Sorted(slices.Values(tags))
	for i, t := range sorted {
		if !a.validTag(t) {
			return nil, ErrInvalidTags
		}
		if i > 0 && sorted[i-1] == t {
			return nil, ErrInvalidTags
		}
	}
	return sorted, nil
}

// tellTaken says which of st's name and secret another token has, so
// that the refusal names the right field. The store's unique keys still
// decide a race between two creates.
func (a *Admin) tellTaken(ctx context.Context, st StoredToken) error {
	toks, err := a.st.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("create token %q: %w", st.Name, err)
	}
	for _, t := range toks {
		switch {
		case t.Name == st.Name:
			return ErrTokenExists
		case t.Hash == st.Hash:
			return ErrSecretInUse
		}
	}
	return nil
}

// List returns every token, sorted by name, without secrets or hashes.
func (a *Admin) List(ctx context.Context) ([]Token, error) {
	toks, err := a.st.Tokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]Token, len(toks))
	for i, t := range toks {
		out[i] = Token{Name: t.Name, AppTags: t.AppTags, CreatedAt: t.CreatedAt}
	}
	return out, nil
}

// Revoke removes the token named name, writing the audit entry with it;
// every instance refuses the token within its refresh interval, this one
// at once. Errors: ErrInvalidName, ErrNoSuchToken, and the store's
// failures.
func (a *Admin) Revoke(ctx context.Context, caller, name string) error {
	if !ValidName(name) {
		return ErrInvalidName
	}
	toks, err := a.st.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("revoke token %q: %w", name, err)
	}
	i := slices.IndexFunc(toks, func(t StoredToken) bool { return t.Name == name })
	if i < 0 {
		return ErrNoSuchToken
	}
	e := entry(caller, ActionTokenRevoke, name, struct {
		AppTags []string `json:"app_tags"`
	}{toks[i].AppTags})
	ok, err := a.st.DeleteToken(ctx, name, e)
	switch {
	case err != nil:
		return fmt.Errorf("revoke token %q: %w", name, err)
	case !ok:
		return ErrNoSuchToken // revoked by another caller meanwhile
	}
	a.reload(ctx)
	return nil
}

// reload has this instance's guard see a change now. A failure is the
// guard's to retry: the change is made, and the next refresh shows it.
func (a *Admin) reload(ctx context.Context) {
	if a.guard != nil {
		_ = a.guard.Reload(ctx)
	}
}

// Record writes an admin change made elsewhere (a tag created or changed,
// an advance) to the audit log: caller as for Create, subject the tag
// ("" for many), detail what changed, marshalled to JSON by
// encoding/json, which must hold no secret.
func (a *Admin) Record(ctx context.Context, caller string, action Action, subject string, detail any) error {
	if err := a.st.Audit(ctx, entry(caller, action, subject, detail)); err != nil {
		return fmt.Errorf("audit %s of %q: %w", action, subject, err)
	}
	return nil
}

// auditTimeout bounds Note's write of an audit entry.
const auditTimeout = 5 * time.Second

// Change is an admin change made elsewhere, as Note records it.
type Change struct {
	// Caller is who made the change, as for Create.
	Caller string
	Action Action
	// Subject is the tag changed, "" for many.
	Subject string
	// Detail is what changed, marshalled to JSON by encoding/json; it
	// must hold no secret.
	Detail any
}

// Note records c, a change a front end has made already, as Record does,
// and logs a failure to log: the change stands either way, so a failure
// is not the caller's to answer (a client's retry would find the change
// made). The write takes ctx's values but not its cancellation, so that
// a client that hangs up after its change does not take the change's
// record with it, and at most auditTimeout.
func (a *Admin) Note(ctx context.Context, log *slog.Logger, c Change) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if err := a.Record(ctx, c.Caller, c.Action, c.Subject, c.Detail); err != nil {
		log.Error("audit entry not written", "err", err, "action", string(c.Action), "subject", c.Subject)
	}
}

// Log returns the newest limit entries of the audit log, newest first; 0
// means DefaultAuditLimit. Errors: ErrInvalidLimit, the store's failures.
func (a *Admin) Log(ctx context.Context, limit int) ([]Entry, error) {
	switch {
	case limit == 0:
		limit = DefaultAuditLimit
	case limit < 1 || limit > MaxAuditLimit:
		return nil, ErrInvalidLimit
	}
	es, err := a.st.AuditLog(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return es, nil
}

// entry is an audit entry with detail as JSON; a caller or subject too
// long for its column is cut.
func entry(caller string, action Action, subject string, detail any) Entry {
	b, err := json.Marshal(detail)
	if err != nil || detail == nil {
		b = []byte("{}") // a detail that cannot be marshalled is our bug; the change is still recorded
	}
	return Entry{Caller: cut(caller, maxCaller), Action: action, Subject: cut(subject, maxSubject), Detail: string(b)}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
