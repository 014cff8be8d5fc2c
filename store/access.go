package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/access"
)

var (
	_ access.Store = (*MySQL)(nil)
	_ access.Store = (*SQLite)(nil)
	_ access.Store = (*Postgres)(nil)
)

// The tables of package access (docs/api.md §12): the per-tag tokens, kept as
// hashes, and the audit log. Like segment_periods they are newer than the
// others, and a start does not require them: -init-schema (and every
// SQLite open) creates them, a call on one that is missing says so and
// names the fix, and the start that needs them, one with alloc_auth on,
// fails on that error when its guard first loads the tokens.
const (
	tokensTable = "alloc_tokens"
	auditTable  = "audit_log"
)

// tokenRow is a row of alloc_tokens.
type tokenRow struct {
	Name      string `db:"name"`
	Hash      string `db:"token_hash"`
	AppTags   string `db:"app_tags"`
	CreatedAt dbTime `db:"created_at"`
}

// auditRow is a row of audit_log.
type auditRow struct {
	ID      int64  `db:"id"`
	At      dbTime `db:"at"`
	Caller  string `db:"caller"`
	Action  string `db:"action"`
	Subject string `db:"subject"`
	Detail  string `db:"detail"`
}

const insertAudit = `INSERT INTO audit_log (at, caller, action, subject, detail) VALUES ({now}, ?, ?, ?, ?)`

// CreateToken adds t and its audit entry e in one transaction, both
// stamped with the database's clock. A name or hash already there (the
// table's primary and unique keys) is access.ErrTokenExists.
func (d *db) CreateToken(ctx context.Context, t access.StoredToken, e access.Entry) error {
	err := d.inTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, d.q(`INSERT INTO alloc_tokens (name, token_hash, app_tags, created_at)
			VALUES (?, ?, ?, {now})`), t.Name, t.Hash, strings.Join(t.AppTags, ","))
		if err != nil {
			if d.dialect.isDuplicate(err) {
				return access.ErrTokenExists
			}
			return err
		}
		return d.audit(ctx, tx, e)
	})
	if err != nil {
		return fmt.Errorf("create token %q: %w", t.Name, d.accessMissing(ctx, err))
	}
	return nil
}

// DeleteToken removes the token named name and adds its audit entry e,
// in one transaction; false, with nothing written, when there is no such
// token.
func (d *db) DeleteToken(ctx context.Context, name string, e access.Entry) (bool, error) {
	var deleted bool
	err := d.inTx(ctx, func(tx *sqlx.Tx) (err error) {
		deleted, err = execOne(ctx, tx, d.q(`DELETE FROM alloc_tokens WHERE name = ?`), name)
		if err != nil || !deleted {
			return err
		}
		return d.audit(ctx, tx, e)
	})
	if err != nil {
		return false, fmt.Errorf("delete token %q: %w", name, d.accessMissing(ctx, err))
	}
	return deleted, nil
}

// Tokens lists every token, sorted by name.
func (d *db) Tokens(ctx context.Context) ([]access.StoredToken, error) {
	var rows []tokenRow
	err := d.x.SelectContext(ctx, &rows, `SELECT name, token_hash, app_tags, created_at FROM alloc_tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", d.accessMissing(ctx, err))
	}
	out := make([]access.StoredToken, len(rows))
	for i, r := range rows {
		var tags []string
		if r.AppTags != "" {
			tags = strings.Split(r.AppTags, ",")
		}
		out[i] = access.StoredToken{Name: r.Name, Hash: r.Hash, AppTags: tags, CreatedAt: r.CreatedAt.Time}
	}
	return out, nil
}

// Audit appends e to the audit log, at the database's clock.
func (d *db) Audit(ctx context.Context, e access.Entry) error {
	if err := d.audit(ctx, d.x, e); err != nil {
		return fmt.Errorf("write audit entry: %w", d.accessMissing(ctx, err))
	}
	return nil
}

// audit inserts e through ex (a transaction, or the pool).
func (d *db) audit(ctx context.Context, ex sqlx.ExecerContext, e access.Entry) error {
	_, err := ex.ExecContext(ctx, d.q(insertAudit), e.Caller, string(e.Action), e.Subject, e.Detail)
	return err
}

// AuditLog returns the newest limit entries, newest first: by id, which
// each engine assigns in the order the inserts commit on one server (on a
// multi-primary cluster, in each node's order, interleaved).
func (d *db) AuditLog(ctx context.Context, limit int) ([]access.Entry, error) {
	var rows []auditRow
	err := d.x.SelectContext(ctx, &rows, d.q(`SELECT id, at, caller, action, subject, detail FROM audit_log
		ORDER BY id DESC LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", d.accessMissing(ctx, err))
	}
	out := make([]access.Entry, len(rows))
	for i, r := range rows {
		out[i] = access.Entry{ID: r.ID, At: r.At.Time, Caller: r.Caller, Action: access.Action(r.Action),
			Subject: r.Subject, Detail: r.Detail}
	}
	return out, nil
}

// accessMissing is err, from a statement on the access tables, as
// ErrMissingTables naming those the database lacks (one made before them
// and opened without -init-schema), so the caller learns the fix rather
// than the engine's code. Asked only after a failure, as periodsMissing.
func (d *db) accessMissing(ctx context.Context, err error) error {
	if errors.Is(err, access.ErrTokenExists) || ctx.Err() != nil {
		return err // an answer, not a failure: the statement ran
	}
	var missing []string
	for _, t := range []string{tokensTable, auditTable} {
		if exists, qerr := d.tableExists(ctx, d.x, t); qerr == nil && !exists {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return d.missingTablesError(missing)
	}
	return err
}
