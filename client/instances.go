package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Set-aside times of an instance.
const (
	// defaultAside is how long an instance that failed without a
	// Retry-After (connection refused, timeout, closed) is passed over.
	defaultAside = time.Second
	// maxAside caps a Retry-After, so a wrong value cannot lose an
	// instance for long.
	maxAside = 30 * time.Second
)

// instance is one idalloc URL.
type instance struct {
	base string
	idx  int // in Client.insts
	// aside is the Client.since reading until which the instance is passed
	// over while others are not; 0 when never set aside.
	aside atomic.Int64
}

func (in *instance) setAside(until time.Duration) {
	for {
		cur := in.aside.Load()
		if int64(until) <= cur || in.aside.CompareAndSwap(cur, int64(until)) {
			return
		}
	}
}

// request is one API call, sent to instances in turn until one answers it.
type request struct {
	method string
	path   string // with its query
	body   []byte // JSON, for POST
	admin  bool   // send the admin token, not the per-tag token
	// elsewhere lists resp_codes, beyond retryElsewhere's, that mean this
	// instance cannot serve the call but another may (snowflake's 5).
	elsewhere int
}

// answer is a decoded response.
type answer struct {
	inst       *instance
	status     int
	retryAfter string // its Retry-After header
	body       []byte // valid until the call's handler returns
}

// order returns the instances to try for one call: those not set aside,
// round robin from the next start; then those set aside, soonest back first,
// as a last resort, so that a call fails only when every instance does.
func (c *Client) order(now time.Duration) []*instance {
	n := len(c.insts)
	out := make([]*instance, 0, n)
	start := int(c.rr.Add(1) % uint64(n))
	for k := range n {
		if in := c.insts[(start+k)%n]; in.aside.Load() <= int64(now) {
			out = append(out, in)
		}
	}
	ready := len(out)
	for _, in := range c.insts {
		if in.aside.Load() > int64(now) {
			out = append(out, in)
		}
	}
	slices.SortStableFunc(out[ready:], func(a, b *instance) int {
		return int(a.aside.Load() - b.aside.Load())
	})
	return out
}

// do sends r to the instances in order until one answers it with success or
// with a refusal that another instance would repeat (an unknown tag, a bad
// token), and gives that answer to handle. An instance that cannot serve
// (connection refused or lost, timeout, 503, 500, not idalloc's JSON) is set
// aside for its Retry-After (default 1s) and the next one is tried; one that
// answers but closes the connection (Connection: close, as a draining
// instance does) is set aside the same way, and its answer used. When every
// instance fails, the error is ErrUnavailable wrapping the last failure.
// ctx ending stops it at once with ctx's error.
func (c *Client) do(ctx context.Context, r request, handle func(answer) error) error {
	var last error
	for _, in := range c.order(c.since()) {
		a, err := c.send(ctx, in, r)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ErrClosed) {
				return err
			}
			in.setAside(c.since() + defaultAside)
			last = err
			continue
		}
		ae, ok := envelope(a.body)
		code := ae.code
		if !ok {
			putBody(a.body)
			in.setAside(c.since() + defaultAside)
			last = fmt.Errorf("idalloc at %s: HTTP %d without idalloc's JSON envelope", in.base, a.status)
			continue
		}
		if code != 0 {
			putBody(a.body)
			e := newError(in.base, a.status, ae)
			e.RetryAfter = retryAfterHeader(a.retryAfter, c.now())
			if retryElsewhere(code) || code == r.elsewhere {
				if a.status != http.StatusServiceUnavailable { // a 503's Retry-After is set already
					in.setAside(c.since() + defaultAside)
				}
				last = e
				continue
			}
			return e
		}
		err = handle(a)
		putBody(a.body)
		return err
	}
	if last == nil {
		last = ErrClosed // no instance at all; cannot happen after New
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, last)
}

// send makes one attempt on one instance and reads the whole body, so the
// connection goes back to the pool. A 503 or a closing connection sets the
// instance aside here, with the answer's Retry-After.
func (c *Client) send(ctx context.Context, in *instance, r request) (answer, error) {
	if c.closed.Load() {
		return answer{}, ErrClosed
	}
	actx, cancel := context.WithTimeout(ctx, c.reqTimeout)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, in.base+r.path, body)
	if err != nil {
		return answer{}, err
	}
	if r.body != nil {
		req.Header["Content-Type"] = jsonCT
	}
	switch {
	case r.admin && c.token != "":
		req.Header["Authorization"] = []string{"Bearer " + c.token}
	case !r.admin && c.tagToken != "":
		req.Header["Authorization"] = []string{"Bearer " + c.tagToken}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("idalloc at %s: %w", in.base, err)
	}
	b, err := readBody(resp.Body)
	resp.Body.Close()
	if err != nil {
		return answer{}, fmt.Errorf("idalloc at %s: read answer: %w", in.base, err)
	}
	if resp.Close || resp.StatusCode == http.StatusServiceUnavailable {
		in.setAside(c.since() + retryAfter(resp.Header.Get("Retry-After"), c.now()))
	}
	return answer{inst: in, status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: b}, nil
}

var jsonCT = []string{"application/json"}

// retryAfter reads a Retry-After header (seconds or an HTTP date), within
// (0, maxAside]; absent or unreadable means defaultAside.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return defaultAside
	}
	var d time.Duration
	if s, err := strconv.Atoi(v); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return defaultAside
	}
	return min(max(d, 100*time.Millisecond), maxAside)
}

// envelope reads resp_code, msg, kind, field and left. ok is false when
// body is not a JSON object with an integer resp_code: a proxy's error
// page, say.
func envelope(body []byte) (a answerError, ok bool) {
	if bytes.HasPrefix(body, okPrefix) {
		return answerError{msg: "success"}, true // the server's own success form, without decoding
	}
	var e struct {
		RespCode *int   `json:"resp_code"`
		Msg      string `json:"msg"`
		Kind     string `json:"kind"`
		Field    string `json:"field"`
		Left     int64  `json:"left"`
	}
	if json.Unmarshal(body, &e) != nil || e.RespCode == nil {
		return answerError{}, false
	}
	return answerError{code: *e.RespCode, msg: e.Msg, kind: e.Kind, field: e.Field, left: e.Left}, true
}

// maxBody bounds an answer: a batch of 100,000 snowflake IDs, each twice
// (ids and ids_str), is under 5 MB.
const maxBody = 16 << 20

// bodyPool recycles answer buffers: a batch's body is parsed into its own
// slice of IDs, so the bytes are free again at once.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func readBody(r io.Reader) ([]byte, error) {
	bp := bodyPool.Get().(*[]byte)
	b := (*bp)[:0]
	for {
		if len(b) == cap(b) {
			if len(b) >= maxBody {
				putBody(b)
				return nil, fmt.Errorf("answer larger than %d bytes", maxBody)
			}
			b = slices.Grow(b, len(b))
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			putBody(b)
			return nil, err
		}
	}
}

func putBody(b []byte) {
	if b == nil {
		return
	}
	b = b[:0]
	bodyPool.Put(&b)
}
