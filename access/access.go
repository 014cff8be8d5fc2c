// Package access is idalloc's per-tag access tokens and its audit log
// (docs/api.md §12), in the manner of Tinyid's tiny_id_token: a token names the
// app_tags its holder may take IDs of, and with alloc_auth on every ID
// call on every front end needs one. It owns the rules and the words:
// what a token and its name are, how a token is checked, and what an
// admin change leaves in the audit table.
//
// A token's secret is shown once, when it is made, and kept only as its
// SHA-256 hash (token.go says why that hash). A Guard answers Allow from a
// table of the hashes that it reloads from the Store every refresh
// interval, so a token created or revoked on any instance is honoured, or
// refused, by every instance within that interval (segment.tag_refresh),
// and by the instance that made the change at once. Admin creates, lists
// and revokes tokens and writes the audit log: each admin change (a tag
// created or changed, a token created or revoked, an advance) with the
// store's time, the caller as the front end knows it, and what changed as
// JSON, never a secret.
//
// The package imports the standard library and the vocabulary (errs,
// naming) only: like every domain package, it reaches its store through the
// Store interface it owns, and the tag rule it applies to app_tags is the
// segment domain's, handed to NewAdmin by the wiring.
package access

import (
	"context"
	"time"
)

// Store keeps the tokens, by hash, and the audit log. Package store
// implements it on every SQL engine.
type Store interface {
	// CreateToken adds t, with e as its audit entry, in one transaction.
	// A name or hash already kept is ErrTokenExists (either way: the
	// store's unique keys decide), and nothing is written.
	CreateToken(ctx context.Context, t StoredToken, e Entry) error
	// DeleteToken removes the token named name, with e as its audit
	// entry, in one transaction; false, and nothing written, when no
	// token has that name.
	DeleteToken(ctx context.Context, name string, e Entry) (bool, error)
	// Tokens lists every token, sorted by name, with its hash and tags
	// and CreatedAt by the store's clock.
	Tokens(ctx context.Context) ([]StoredToken, error)
	// Audit appends e to the audit log; its At is the store's clock
	// (e.At is not read) and its ID the store's next.
	Audit(ctx context.Context, e Entry) error
	// AuditLog returns the newest limit entries, newest first.
	AuditLog(ctx context.Context, limit int) ([]Entry, error)
}

// StoredToken is a token as the store keeps it: never its secret.
type StoredToken struct {
	Name string
	// Hash is the SHA-256 of the secret, in lowercase hex (HashToken).
	Hash string
	// AppTags are the tags the token may take IDs of, sorted, each once.
	AppTags []string
	// CreatedAt is the store's clock at create; Store.CreateToken does
	// not read it.
	CreatedAt time.Time
}

// Action is what an admin change did, as the audit log names it.
type Action string

// The audited changes (docs/api.md §12).
const (
	ActionTagCreate   Action = "tag.create"
	ActionTagUpdate   Action = "tag.update"
	ActionTokenCreate Action = "token.create"
	ActionTokenRevoke Action = "token.revoke"
	ActionAdvance     Action = "advance"
)

// Entry is one row of the audit log.
type Entry struct {
	// ID is the store's, increasing with each entry; 0 until stored.
	ID int64
	// At is the store's clock when the entry was written.
	At time.Time
	// Caller is who made the change, as the front end knows it: how it
	// was allowed ("admin-token", "loopback") and the remote address.
	Caller string
	Action Action
	// Subject is the tag or token name the change was made to ("" for a
	// change to many, such as an advance of every tag).
	Subject string
	// Detail is what changed, a JSON object; never a secret.
	Detail string
}

// Limits of the audit log's columns: a longer caller is cut (it is the
// front end's description of a peer, not input to refuse).
const (
	maxCaller  = 255
	maxSubject = 64
)
