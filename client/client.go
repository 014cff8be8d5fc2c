package client

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idalloc/idalloc/naming"
)

// Client hands out idalloc IDs from local buffers. It is safe for
// concurrent use.
//
// Next answers from a per-tag buffer: the current batch, which callers
// take from with one atomic add and no lock, and the answers fetched
// ahead, with GET /alloc?app_tag=T&count=N&as=ranges in the background
// once a fifth of an answer is left. Ranges ([first,last] pairs) cost a
// few bytes however many IDs they hold, so a caller's rate is the
// client's own, not the server's encoder's. A tag whose IDs are not runs
// of numbers (scrambled, dated; the instance refuses ranges naming "as")
// and every tag of a server without ranges (it answers a list) is fetched
// as a list (count=N) from its first answer on. A caller waits on the
// network only when the buffer is empty. N adapts to the caller's pace:
// it starts at 16, doubles while fetches come back to back (less than
// 100ms apart, or a caller found the buffer empty), and halves when they
// are more than 10s apart, within 1..MaxRange (1..MaxBatch for lists). A
// fetch that finds the buffer already empty is followed at once by the
// next; a caller that takes MaxRange IDs within 100ms has two answers
// kept ahead and up to two fetches at once (queue.go).
//
// Requests go to the URLs round robin. An instance that refuses the
// connection, times out, answers 503 or 500, or closes the connection after
// its answer (Connection: close, as a draining instance does) is set aside
// for its Retry-After (1s when it gives none) and the next one is used; one
// set aside is still tried as a last resort before a call fails, so a call
// fails (ErrUnavailable) only when every instance failed it.
//
// Guarantees: every ID is handed out once (each comes from one answer and
// each index of a batch is claimed once); the IDs one goroutine gets for a
// tag are strictly increasing while a single instance serves the Client
// (an instance's claims for a tag only increase; ranges are served by
// first ID, and one that arrives after a higher one of its instance was
// served is dropped, see queue.go). An Unordered (Client.Unordered) keeps
// both promises for its own goroutine, from blocks of the same buffer.
// Lists are used in the order received: nothing beyond that is assumed,
// so tags whose IDs are not increasing (scrambled) are served as they
// come. IDs left in a buffer when the
// process ends, or dropped, are never issued: a restart skips them, it
// never repeats them. A dated tag's buffered IDs are dropped when their
// period ends, or DatedMaxAge after they were requested when the answer
// does not say when it ends (NextText, text.go): their stamp is then the
// period in which they were handed out, and a new period's start the
// first ID of the next batch.
//
// Goroutines: at most two fetches per tag of ranges, and one per tag of
// lists (and one for snowflake IDs) run at a time, each on a goroutine
// started for that fetch; Close stops and waits for all of them, and
// closes the Keepers made over the Client.
type Client struct {
	insts      []*instance
	hc         *http.Client
	own        *http.Transport // the transport New made, closed by Close
	token      string          // the admin token, for lease calls
	tagToken   string          // the per-tag token, for ID calls
	cluster    string
	maxBatch   countCap      // of lists
	maxRange   countCap      // of ranges
	maxAge     time.Duration // of snowflake IDs
	datedAge   time.Duration // of a dated tag's IDs when the answer does not say when their period ends
	reqTimeout time.Duration
	now        func() time.Time
	base       time.Time
	log        *slog.Logger
	rr         atomic.Uint64

	// tags maps a tag to its buffer. It is read on every Next without a
	// lock and copied whole to add or drop a tag (under tagsMu): a plain
	// map with string keys is read without sync.Map's interface hashing
	// (a fifth of Next's cost in a profile), and a process uses few tags.
	tags   atomic.Pointer[map[string]*buffer]
	tagsMu sync.Mutex
	snow   *buffer

	closed  atomic.Bool
	ctx     context.Context // ends at Close; fetches run under it
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closedC chan struct{} // closed when the first Close returns

	mu      sync.Mutex // orders wg.Add with Close's wg.Wait; guards the fields below
	closing bool
	keepers map[*Keeper]struct{}
}

// Next returns the next ID of tag. It waits on the network only when the
// tag's buffer is empty, and then no longer than ctx allows. Errors:
// ErrInvalidTag (no request is made), ErrUnknownTag, ErrExhausted,
// ErrUnavailable, ErrClosed, ctx's error; for a dated tag also
// ErrPeriodExhausted, and ErrTextOnly when its IDs are text (NextText
// serves them; no ID is used up); an answer's error is an *Error.
func (c *Client) Next(ctx context.Context, tag string) (int64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if b := (*c.tags.Load())[tag]; b != nil {
		if id, ok := b.take(); ok {
			return id, nil
		}
		return b.nextID(ctx)
	}
	b, err := c.newTag(tag)
	if err != nil {
		return 0, err
	}
	return b.nextID(ctx)
}

// NextN fills dst with IDs of tag, in the order Next would return them
// (strictly increasing while one instance serves). It takes dst rather than
// a count, like segment.Allocator.NextN and snowflake.Generator.NextN: the
// caller owns the memory and can reuse it, so a call allocates nothing.
// A dst longer than what is buffered waits for as many fetches as it needs.
// Errors as Next; on error the IDs already written are discarded (they are
// never handed out again) and dst's content is unspecified.
func (c *Client) NextN(ctx context.Context, tag string, dst []int64) error {
	if c.closed.Load() {
		return ErrClosed
	}
	b := (*c.tags.Load())[tag]
	if b == nil {
		var err error
		if b, err = c.newTag(tag); err != nil {
			return err
		}
	}
	return b.fill(ctx, dst)
}

// Snowflake returns a snowflake ID. IDs come from GET /snowflake?count=N
// batches, buffered as segment IDs are, but each batch is used for at most
// Config.SnowflakeMaxAge after it was requested: an ID carries the
// millisecond it was made, and a stale one would misdate its record. Among
// the instances, one answering resp_code 4 (clock moved backwards) or 5 (no
// worker ID) is set aside like an unavailable one. Errors as Next, without
// the tag errors.
func (c *Client) Snowflake(ctx context.Context) (int64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if id, ok := c.snow.take(); ok {
		return id, nil
	}
	return c.snow.nextID(ctx)
}

// Close closes the Keepers made over c (releasing their leases), stops
// every background fetch and waits for them; later calls (an Unordered's
// Next too) return ErrClosed, and callers waiting on a fetch return
// ErrClosed at once. IDs still buffered, or left in an Unordered's block,
// are dropped (never issued by anyone). It closes the idle
// connections of the Client's own transport. It is idempotent, waits for
// the first call to finish, and returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.closedC
		return nil
	}
	c.closing = true
	keepers := c.keepers
	c.keepers = nil
	c.mu.Unlock()
	for k := range keepers {
		// 0: the lease's last reservation covers every ID issued under it.
		ctx, cancel := context.WithTimeout(context.Background(), c.reqTimeout)
		_ = k.Close(ctx, 0)
		cancel()
	}
	c.mu.Lock()
	c.closed.Store(true)
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
	close(c.closedC)
	return nil
}

// track registers a Keeper for Close; false once Close has begun.
func (c *Client) track(k *Keeper) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	if c.keepers == nil {
		c.keepers = make(map[*Keeper]struct{})
	}
	c.keepers[k] = struct{}{}
	return true
}

func (c *Client) untrack(k *Keeper) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keepers, k)
}

// newTag returns the buffer of a tag seen for the first time.
func (c *Client) newTag(tag string) (*buffer, error) {
	if !naming.Valid(tag) {
		return nil, ErrInvalidTag
	}
	c.tagsMu.Lock()
	defer c.tagsMu.Unlock()
	old := *c.tags.Load()
	if b := old[tag]; b != nil {
		return b, nil
	}
	b := newBuffer(c, tag, c.fetchSegment, 0, false)
	m := make(map[string]*buffer, len(old)+1)
	maps.Copy(m, old)
	m[tag] = b
	c.tags.Store(&m)
	return b, nil
}

// forget drops the buffer of a tag the servers do not know, so that
// callers' stray tags do not accumulate; the next call starts afresh.
func (c *Client) forget(b *buffer, err error) {
	if b.tag == "" || !errors.Is(err, ErrUnknownTag) {
		return
	}
	c.tagsMu.Lock()
	defer c.tagsMu.Unlock()
	old := *c.tags.Load()
	if old[b.tag] != b {
		return
	}
	m := maps.Clone(old)
	delete(m, b.tag)
	c.tags.Store(&m)
}

// goFetch runs f on a new goroutine that Close waits for; false once
// closed.
func (c *Client) goFetch(f func(context.Context)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return false
	}
	c.wg.Go(func() { f(c.ctx) })
	return true
}

// since reads the Client's clock as an offset from its creation: one
// monotonic reading, comparable as an integer.
func (c *Client) since() time.Duration { return c.now().Sub(c.base) }

func (c *Client) batchCap() int { return int(c.maxBatch.v.Load()) }

func (c *Client) rangeCap() int { return int(c.maxRange.v.Load()) }

// countCap is one of the Client's caps on a fetch's count, lowered when
// an instance refuses a count.
type countCap struct {
	v      atomic.Int64
	field  string // the Config field it comes from
	listed bool   // answers list their IDs: room for n is made beforehand
}

// fetchSegment asks for n IDs of tag: as ranges (as=ranges) until the tag
// is known to need lists. An instance that refuses ranges for the tag
// (resp_code 1 naming "as": a scrambled or dated tag) is asked again at
// once for a list of up to MaxBatch, and so is every later fetch; an
// instance without ranges ignores the parameter and answers a list, which
// is served as it is and likewise turns the tag to lists (the API's
// servers ignore a query parameter they do not know). A dated tag's IDs
// (an answer with id_str or ids_str, or period_ends_in_ms) expire when
// their period ends (freshness in text.go).
func (c *Client) fetchSegment(ctx context.Context, tag string, n int, lists bool) (fetched, error) {
	if !lists {
		d, sent, err := c.fetchIDs(ctx, "/alloc?app_tag="+tag+"&as=ranges&count=", n, 0, &c.maxRange)
		if e, ok := errors.AsType[*Error](err); !ok || e.RespCode != 1 || e.field != "as" {
			f := c.segmentFetched(d, sent, err)
			f.lists = err == nil && d.spans == nil
			return f, err
		}
		n = min(n, c.batchCap())
	}
	d, sent, err := c.fetchIDs(ctx, "/alloc?app_tag="+tag+"&count=", n, 0, &c.maxBatch)
	f := c.segmentFetched(d, sent, err)
	f.lists = true
	return f, err
}

// segmentFetched is the fetched of an /alloc answer: a dated tag's IDs
// expire when their period ends, or DatedMaxAge after sent when the
// answer does not say.
func (c *Client) segmentFetched(d decoded, sent time.Duration, err error) fetched {
	f := fetched{spans: d.spans, ids: d.ids, strs: d.strs, inst: d.inst}
	switch {
	case err != nil:
	case d.endsIn >= 0:
		f.expires = expiry(sent, d.endsIn)
	case d.dated:
		f.expires = expiry(sent, c.datedAge)
	}
	return f
}

// fetchSnowflake asks for n snowflake IDs, which expire SnowflakeMaxAge
// after the request was sent. An instance without a worker ID (resp_code
// 5) is skipped: another may have one.
func (c *Client) fetchSnowflake(ctx context.Context, _ string, n int, _ bool) (fetched, error) {
	d, sent, err := c.fetchIDs(ctx, "/snowflake?count=", n, 5, &c.maxBatch)
	return fetched{ids: d.ids, expires: expiry(sent, c.maxAge), lists: true}, err
}

// expiry is the Client.since reading age after sent, never 0 (never).
func expiry(sent, age time.Duration) time.Duration { return max(sent+age, 1) }

// fetchIDs makes one batch call; sent is the Client.since reading just
// before the request that was answered. A count an instance refuses (its
// max_batch, or max_range, is below the client's) halves the Client's cap
// (limit), and the call is made again with the smaller count; one refused
// as more than the tag has left there (ErrBatchTooLarge) is made again at
// once for what is left, the cap kept. An answer of ranges must hold n
// IDs.
func (c *Client) fetchIDs(ctx context.Context, path string, n, elsewhere int, limit *countCap) (decoded, time.Duration, error) {
	for {
		sent := c.since()
		var d decoded
		err := c.do(ctx, request{method: http.MethodGet, path: path + strconv.Itoa(n), elsewhere: elsewhere},
			func(a answer) error {
				var dst []int64 // ranges need no room per ID
				if limit.listed {
					dst = make([]int64, 0, n)
				}
				var err error
				if d, err = decode(dst, a.body); err == nil && d.spans != nil {
					err = spansHold(d.spans, n)
				}
				d.inst = a.inst
				return err
			})
		if e, ok := errors.AsType[*Error](err); ok && n > 1 && e.RespCode == 1 && e.field == "count" {
			if e.Left > 0 {
				if e.Left < int64(n) {
					n = int(e.Left)
					continue
				}
				return d, sent, err // more than asked for: the instance's own confusion
			}
			n = c.lowerCap(limit, n)
			continue
		}
		return d, sent, err
	}
}

// lowerCap halves a cap below a refused count and returns it.
func (c *Client) lowerCap(limit *countCap, refused int) int {
	n := max(refused/2, 1)
	for {
		cur := limit.v.Load()
		if cur <= int64(n) || limit.v.CompareAndSwap(cur, int64(n)) {
			break
		}
	}
	c.log.Warn("idalloc refused a count: lowering the client's "+limit.field+" to match the server's",
		"refused", refused, "cap", limit.v.Load())
	return min(n, int(limit.v.Load()))
}
