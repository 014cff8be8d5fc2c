package access

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRefresh is Config.Refresh's default: segment.tag_refresh's.
const DefaultRefresh = 10 * time.Second

// Config tunes a Guard. Zero values mean the documented defaults.
type Config struct {
	// Refresh is how often the guard reloads the tokens from its store:
	// the most a token revoked or created on another instance goes on
	// being honoured, or refused, here. main passes segment.tag_refresh.
	// 0 means DefaultRefresh; negative is an error.
	Refresh time.Duration
	// Logger is told when a reload fails and when reloads work again; nil
	// discards.
	Logger *slog.Logger
}

// Guard answers whether a token may take IDs of a tag, from the table of
// tokens it last loaded. It starts one goroutine, which reloads the table
// every Config.Refresh until Close stops it and waits for it.
//
// While its store cannot be read, a guard keeps the table it has: a
// revocation is a write to that same store, so one this instance has not
// seen was made through a store it cannot reach, and refusing every ID
// call meanwhile would turn a store outage into an outage of the IDs the
// segment buffers still hold (docs/api.md §5.4).
type Guard struct {
	st      Store
	refresh time.Duration
	log     *slog.Logger

	table atomic.Pointer[table]
	// loadMu orders loads, so that a slow load never replaces the table of
	// one that started after it.
	loadMu sync.Mutex
	failed bool // the last load failed; under loadMu

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// grant is one token as the guard holds it.
type grant struct {
	hash [sha256.Size]byte
	name string
	tags map[string]struct{}
}

// table finds grants by the first 8 bytes of their hash; the whole hash
// is then compared in constant time (find).
type table map[uint64][]*grant

// NewGuard loads the tokens from st once, so that the guard answers from
// its first call, and starts reloading them every cfg.Refresh. Errors: a
// negative Refresh, or the first load's failure (a database without the
// alloc_tokens table names the fix).
func NewGuard(ctx context.Context, st Store, cfg Config) (*Guard, error) {
	if cfg.Refresh < 0 {
		return nil, errors.New("access: Config.Refresh must not be negative")
	}
	g := &Guard{st: st, refresh: cfg.Refresh, log: cfg.Logger, done: make(chan struct{})}
	if g.refresh == 0 {
		g.refresh = DefaultRefresh
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if err := g.Reload(ctx); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	go g.loop(lctx)
	return g, nil
}

// Allow is nil when token may take IDs of tag, else ErrTokenMissing (""),
// ErrTokenUnknown (no token has its hash) or ErrForbidden (a token not
// allowed tag). It allocates nothing and asks no store.
func (g *Guard) Allow(token, tag string) error {
	gr, err := g.find(token)
	if err != nil {
		return err
	}
	if _, ok := gr.tags[tag]; !ok {
		return ErrForbidden
	}
	return nil
}

// AllowAny is nil when token is any known token, else ErrTokenMissing or
// ErrTokenUnknown: for the ID calls that name no tag (snowflake IDs), and
// for RESP's AUTH.
func (g *Guard) AllowAny(token string) error {
	_, err := g.find(token)
	return err
}

// find returns the grant whose hash is token's.
//
// The table is indexed by the first 8 bytes of the hash, and the whole
// hash is compared with subtle.ConstantTimeCompare, so the time a check
// takes does not depend on how much of a stored hash the presented one
// matches. The index lookup's time may depend on those 8 bytes, but they
// are bytes of a SHA-256 output: learning that a guess's hash begins like
// a stored one tells nothing about the stored token's secret.
func (g *Guard) find(token string) (*grant, error) {
	if token == "" {
		return nil, ErrTokenMissing
	}
	if len(token) > MaxTokenLength {
		return nil, ErrTokenUnknown // no token is longer
	}
	h := sum(token)
	var found *grant
	for _, gr := range (*g.table.Load())[binary.BigEndian.Uint64(h[:8])] {
		if subtle.ConstantTimeCompare(gr.hash[:], h[:]) == 1 {
			found = gr
		}
	}
	if found == nil {
		return nil, ErrTokenUnknown
	}
	return found, nil
}

// Reload loads the tokens from the store now; the guard answers from
// them once it returns nil. On an error the table is kept.
func (g *Guard) Reload(ctx context.Context) error {
	g.loadMu.Lock()
	defer g.loadMu.Unlock()
	toks, err := g.st.Tokens(ctx)
	if err == nil {
		var t table
		if t, err = buildTable(toks); err == nil {
			g.table.Store(&t)
		}
	}
	if err != nil {
		return fmt.Errorf("load tokens: %w", err)
	}
	return nil
}

// buildTable indexes toks by hash. A hash that is not 64 hex digits is a
// row written by hand, refused rather than skipped: skipping it would
// refuse its holder without saying why.
func buildTable(toks []StoredToken) (table, error) {
	t := make(table, len(toks))
	for _, st := range toks {
		gr := &grant{name: st.Name, tags: make(map[string]struct{}, len(st.AppTags))}
		if n, err := hex.Decode(gr.hash[:], []byte(st.Hash)); err != nil || n != sha256.Size || len(st.Hash) != 2*sha256.Size {
			return nil, fmt.Errorf("token %q: its hash is not a SHA-256 in hex", st.Name)
		}
		for _, tag := range st.AppTags {
			gr.tags[tag] = struct{}{}
		}
		k := binary.BigEndian.Uint64(gr.hash[:8])
		t[k] = append(t[k], gr)
	}
	return t, nil
}

// loop reloads the table every refresh until ctx ends, logging when
// reloads start failing and when they work again, not every failure.
func (g *Guard) loop(ctx context.Context) {
	defer close(g.done)
	tick := time.NewTicker(g.refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Bounded by the interval, so a hung store delays no reload
		// beyond the next.
		lctx, cancel := context.WithTimeout(ctx, g.refresh)
		err := g.Reload(lctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		g.noteLoad(err)
	}
}

// noteLoad logs a load's outcome when it differs from the last one's.
func (g *Guard) noteLoad(err error) {
	g.loadMu.Lock()
	defer g.loadMu.Unlock()
	switch {
	case err != nil && !g.failed:
		g.log.Warn("access tokens: reload failed; answering from the tokens last loaded", "err", err)
	case err == nil && g.failed:
		g.log.Info("access tokens: reloaded again")
	}
	g.failed = err != nil
}

// Close stops the reloads and waits for the goroutine to end. It is
// idempotent; the guard answers from its last table afterwards.
func (g *Guard) Close() error {
	g.closeOnce.Do(func() {
		g.stop()
		<-g.done
	})
	return nil
}
