// Package segment provides a Leaf-style double-buffered ID allocator: per tag
// it serves IDs from a reserved range in memory and fetches the next range in
// the background once 10% of the current one is used, so the store is never
// on the request path while buffered IDs remain.
//
// Guarantees: no ID is handed out twice, by this or any other allocator on the
// same store; per tag, the IDs one caller receives strictly increase (but a
// scrambled tag's, which are unique in no order: see format.go); Close gives
// unused IDs back to the store when no one advanced the row meanwhile.
//
// Each tag is served in its number format (docs/api.md §7), fixed at create:
// sequential, fixed_length or scrambled. The formats share the machinery:
// segments, give-back and the store's row count the tag's sequence, which a
// scrambled tag maps through a keyed permutation as the last step of issue.
// Format dated (docs/api.md §11) counts its sequence per period, in counters a
// PeriodStore keeps, and writes the period's stamp before it: each period
// has a double buffer of its own (dated_buffer.go), and text IDs come
// from NextText and its kin (dated_ids.go).
//
// An allocator may serve one region of several (docs/api.md §13; Config.Region,
// region.go), sites that share no database: its IDs are then the numbers
// ≡ ID (mod Count) of each fetched range, so the regions' stores never
// issue the same ID. CheckRegion holds a store to the region it serves.
//
// Errors carry their meaning: every refusal is an *errs.Error with a Kind
// of idalloc's vocabulary (bad_request, unknown_tag, exists, exhausted,
// period_exhausted, unavailable, draining), the field at fault, and the
// message a user reads, which names the input and what a valid one is
// ("invalid step: must be from 1 to 1000000"). The rules and the words live here, once:
// CheckNewTag holds every rule a new tag must meet. Front ends (HTTP, RESP)
// parse their wire format, call the Allocator, and answer an error with
// errs.Describe: the Kind picks their own code or class from one small
// table, the message goes out unchanged. The sentinels (ErrUnknownTag,
// ErrInvalidStep, ...) match with errors.Is.
package segment

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/errs"
)

// DefaultMaxStep is the adaptive step's cap when Config.MaxStep is 0.
const DefaultMaxStep = 1_000_000

// Config tunes an Allocator. Zero values mean the documented defaults.
type Config struct {
	MaxStep      int64         // cap of the adaptive step; 0 means 1,000,000
	TagRefresh   time.Duration // how often the tag list is reloaded; 0 means 10s
	WaitTimeout  time.Duration // how long a request waits for a fetch when nothing is buffered; 0 means 1s
	FetchTimeout time.Duration // bound of one store call; 0 means 5s
	// MaxClockSkew is how far this instance's clock may be from the
	// store's while it serves dated tags (dated.max_clock_skew); 0 means
	// DefaultMaxClockSkew, 1s. See dated_clock.go.
	MaxClockSkew time.Duration
	// Now is this instance's clock; nil means time.Now. A dated tag's
	// period is read from it.
	Now      func() time.Time
	Observer Observer     // optional: metrics hooks
	Logger   *slog.Logger // store faults, recoveries, give-back at Close; nil discards
	// Rand is where a scrambled tag's key comes from (scramble.KeySize
	// bytes, made at CreateTag); nil means crypto/rand.Reader. Only tests
	// set it.
	Rand io.Reader
	// Region is where this instance serves (docs/api.md §13, region.go): in
	// region ID of Count its tags' numbers are those ≡ ID (mod Count).
	// The zero Region is a single region, every number. The store must
	// serve the same region (CheckRegion, which the caller runs first).
	Region Region
}

// Observer receives events for metrics. Methods must be cheap and safe for
// concurrent use; they are never called on the per-ID path.
type Observer interface {
	// Fetched reports one fetch attempt: how long the store took and its
	// error, nil on success. A fetch that failed after its deadline is
	// ErrFetchTimedOut: the store may have committed its range all the same.
	Fetched(tag string, took time.Duration, err error)
	// GaveBack reports unused IDs returned to the store on Close.
	GaveBack(tag string, n int64)
	// Wasted reports IDs this allocator reserved and will never issue, when
	// it learns of them (see WasteReason).
	Wasted(tag string, n int64, why WasteReason)
}

// minReloadGap bounds the tag-list reloads that misses (unknown tags) can
// cause, so a flood of unknown tags costs the store at most one query a second.
const minReloadGap = time.Second

// Allocator hands out IDs per tag. It starts one goroutine that reloads the
// tag list (and checks the clock for dated tags), and at most one fetch
// goroutine per tag at a time (per period and tag, for dated tags, of
// which two overlap around a period's end), and a timer per dated tag
// that starts the next period's fetch; Close stops and waits for all of
// them.
type Allocator struct {
	store Store
	// periods is the store's PeriodStore, nil when it has none: then no
	// dated tag is created or served.
	periods PeriodStore
	cfg     Config
	// region is cfg.Region with Count 0 written as 1.
	region Region
	// coarse is the clock dated claims read between boundaries.
	coarse coarseClock
	// clock bounds this instance's clock by the store's for dated tags;
	// hasDated is set once a dated tag is served, so that an allocator
	// without any asks nothing of the store's clock.
	clock    clockCheck
	hasDated atomic.Bool
	// errStep refuses a step above cfg.MaxStep in words that name it.
	errStep *errs.Error

	// index finds the buffer of each tag served, without a lock; list is
	// what Tags shows. tagsMu serialises additions to index, and orders
	// them with list's changes.
	index  bufferIndex
	list   tagList
	tagsMu sync.Mutex
	// reloadMu: one reload at a time (misses TryLock it); it guards
	// reloads. lastReload is the UnixNano of the last reload's start.
	reloadMu   sync.Mutex
	reloads    reloadState
	lastReload atomic.Int64
	// randN returns a random duration in [0, n), for the fetch loops'
	// jitter: rand.N, or a fixed choice in tests.
	randN func(n time.Duration) time.Duration

	// lifeMu orders Close against fetch starts: a fetch starts only while
	// not closed, so Close's wait covers every fetch goroutine.
	lifeMu    sync.Mutex
	closed    atomic.Bool
	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// New loads the tag list and starts the refresher. Errors: ErrInvalidConfig
// for a negative field or a Region that Region.Check refuses, or the
// store's when the first tag list cannot be read.
func New(ctx context.Context, store Store, cfg Config) (*Allocator, error) {
	if cfg.MaxStep < 0 || cfg.TagRefresh < 0 || cfg.WaitTimeout < 0 || cfg.FetchTimeout < 0 || cfg.MaxClockSkew < 0 {
		return nil, fmt.Errorf("%w: negative MaxStep, TagRefresh, WaitTimeout, FetchTimeout or MaxClockSkew", ErrInvalidConfig)
	}
	if err := cfg.Region.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = DefaultMaxClockSkew
	}
	if cfg.MaxStep == 0 {
		cfg.MaxStep = DefaultMaxStep
	}
	if cfg.TagRefresh == 0 {
		cfg.TagRefresh = 10 * time.Second
	}
	if cfg.WaitTimeout == 0 {
		cfg.WaitTimeout = time.Second
	}
	if cfg.FetchTimeout == 0 {
		cfg.FetchTimeout = 5 * time.Second
	}
	coarse := cfg.Now == nil // dated claims may read the coarse clock (dated_coarse.go)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	a := &Allocator{store: timedStore{store}, cfg: cfg, region: cfg.Region.Normal(), errStep: stepError(cfg.MaxStep),
		closing: make(chan struct{})}
	if ps, ok := store.(PeriodStore); ok {
		a.periods = timedPeriods{ps}
	}
	a.clock.bound, a.clock.log = cfg.MaxClockSkew, cfg.Logger
	a.coarse.on = coarse
	a.index.init()
	a.list.init()
	a.randN = mrand.N[time.Duration]
	if err := a.reload(ctx, true); err != nil {
		return nil, err
	}
	a.wg.Add(1)
	go a.refreshLoop()
	return a, nil
}

func (a *Allocator) now() time.Time { return a.cfg.Now() }

// Now reads the clock the allocator judges dated periods by (Config.Now):
// what a front end measures a period's end against.
func (a *Allocator) Now() time.Time { return a.cfg.Now() }

// Next returns the next ID of tag. Errors: ErrInvalidTag, ErrUnknownTag,
// ErrUnavailable (nothing buffered and the store did not deliver within
// WaitTimeout), ErrExhausted, ErrClosed; for a dated tag also ErrTextOnly
// (its IDs are text: NextText), a case of ErrClockSkew, an
// *dated.ExhaustedError (dated.ErrPeriodExhausted) and
// dated.ErrClockRange.
func (a *Allocator) Next(ctx context.Context, tag string) (int64, error) {
	b := a.index.hot(tag)
	if b == nil {
		var err error
		if b, err = a.buffer(ctx, tag); err != nil {
			return 0, err
		}
	}
	if b.dated != nil {
		return b.dated.nextID(ctx)
	}
	for {
		// One atomic add claims the ID: the whole hot path.
		s := b.cur.Load()
		end, prefetchAt := s.end, s.prefetchAt
		id := s.cursor.Add(1) - 1
		if id <= end {
			if id == prefetchAt {
				b.prefetch()
			}
			// The one branch formats and regions cost the hot path:
			// only a scrambled tag's, or a region's, index is not
			// its ID.
			if !b.mapped {
				return id, nil
			}
			return b.issue(id)
		}
		if err := b.advance(ctx, s); err != nil {
			return 0, err
		}
	}
}

// NextN fills dst with len(dst) strictly increasing IDs of tag. A batch larger
// than what is buffered spans segments, so its IDs are not always contiguous.
// A scrambled tag's batch holds the IDs of strictly increasing sequence
// numbers: unique, but in no order, as its IDs always are. In a region
// (Config.Region) a batch's IDs are every Count-th number at best.
// On error dst holds no usable IDs. A batch is claimed whole or not at all
// (batch.go), so its failure leaves no gap, and one larger than what the
// tag has left on this instance is refused with nothing taken: a
// *TooLargeError (ErrBatchTooLarge), or ErrExhausted when nothing is left.
// A dated tag's batch is of one period (dated_ids.go). Errors as Next's.
func (a *Allocator) NextN(ctx context.Context, tag string, dst []int64) error {
	b, err := a.buffer(ctx, tag)
	if err != nil {
		return err
	}
	if b.dated != nil {
		return b.dated.nextN(ctx, dst)
	}
	if err := b.fillBatch(ctx, dst); err != nil {
		return err
	}
	if b.mapped {
		if err := b.issueAll(dst); err != nil {
			b.waste(int64(len(dst)), WasteBatch)
			return err
		}
	}
	return nil
}

// buffer finds tag's buffer. A miss reloads the tag list, at most once per
// minReloadGap however many misses arrive, so unknown tags cannot flood the
// store.
func (a *Allocator) buffer(ctx context.Context, tag string) (*buffer, error) {
	if b := a.index.get(tag); b != nil {
		return b, nil
	}
	if !ValidTag(tag) {
		return nil, ErrInvalidTag
	}
	if a.closed.Load() {
		return nil, ErrClosed
	}
	if a.sinceReload() < minReloadGap || !a.reloadMu.TryLock() {
		return nil, ErrUnknownTag
	}
	defer a.reloadMu.Unlock()
	if b := a.index.get(tag); b != nil {
		return b, nil
	}
	if a.sinceReload() < minReloadGap {
		return nil, ErrUnknownTag
	}
	if err := a.reloadLocked(ctx, false); err != nil {
		return nil, ErrUnavailable
	}
	if b := a.index.get(tag); b != nil {
		return b, nil
	}
	return nil, ErrUnknownTag
}

func (a *Allocator) sinceReload() time.Duration {
	return a.now().Sub(time.Unix(0, a.lastReload.Load()))
}
