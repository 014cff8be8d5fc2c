package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

type mode string

const (
	modeSegment   mode = "segment"   // GET /alloc?app_tag=T[&count=N] on idalloc
	modeSnowflake mode = "snowflake" // GET /snowflake[?count=N] on idalloc
	modeBare      mode = "bare"      // GET /alloc?app_tag=T on cmd/barechi: single IDs only
)

// config is one run, as the flags set it.
type config struct {
	URLs        []string
	Mode        mode
	Tag         string
	Count       int
	Clients     int
	Duration    time.Duration // measured phase; always bounds the run
	Warmup      time.Duration // before it, not in the figures (IDs still checked)
	Requests    int64         // stop after this many measured requests; 0: duration only
	Rate        float64       // requests/s over all clients (open loop); 0: closed loop
	Timeout     time.Duration // per request, to the response headers
	Client      string        // "http" (net/http Transport) or "raw"
	AllowRemote bool
	KeepIDs     bool
	MaxIDs      int64 // IDs kept in all, for the duplicate check
}

// Histogram range: 1µs resolution up to 60s, 3 significant digits.
const (
	histLowest  = int64(time.Microsecond)
	histHighest = int64(time.Minute)
	histDigits  = 3
	maxBody     = 16 << 20
)

// Bounds on what a run may ask for, so a typo cannot turn into an
// unbounded run or an unbounded heap.
const (
	maxDuration = time.Hour
	maxClients  = 10_000
	maxRate     = 100_000_000
)

func (c *config) validate() error {
	if len(c.URLs) == 0 {
		return errors.New("-url: at least one base URL")
	}
	if c.Client != "http" && c.Client != "raw" {
		return fmt.Errorf("-client %q: want http or raw", c.Client)
	}
	for i, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("-url %q: want http://host:port[/prefix]", raw)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("-url %q: a base URL has no query or fragment", raw)
		}
		if c.Client == "raw" && u.Scheme != "http" {
			return fmt.Errorf("-url %q: -client raw speaks plain http only", raw)
		}
		if !c.AllowRemote && !isLoopback(u.Hostname()) {
			return fmt.Errorf("-url %q: %s is not a loopback address; pass -allow-remote to load another host", raw, u.Hostname())
		}
		c.URLs[i] = strings.TrimRight(raw, "/")
	}
	switch c.Mode {
	case modeSegment, modeBare:
		if c.Tag == "" {
			return errors.New("-tag: required in segment and bare modes")
		}
	case modeSnowflake:
	default:
		return fmt.Errorf("-mode %q: want segment, snowflake or bare", c.Mode)
	}
	switch {
	case c.Mode == modeBare && c.Count != 0:
		return errors.New("-count: the bare handler serves single IDs only")
	case c.Count < 0 || c.Count > 100_000:
		return fmt.Errorf("-count %d: want 0 (single IDs) to 100000", c.Count)
	case c.Clients < 1 || c.Clients > maxClients:
		return fmt.Errorf("-c %d: want 1 to %d clients", c.Clients, maxClients)
	case c.Duration <= 0 || c.Duration > maxDuration:
		return fmt.Errorf("-d %s: want a duration above 0 and at most %s", c.Duration, maxDuration)
	case c.Warmup < 0 || c.Warmup > maxDuration:
		return fmt.Errorf("-warmup %s: want 0 to %s", c.Warmup, maxDuration)
	case c.Requests < 0:
		return errors.New("-n: must not be negative")
	case c.Rate < 0 || c.Rate > maxRate:
		return fmt.Errorf("-rate %g: want 0 (closed loop) to %g requests/s", c.Rate, float64(maxRate))
	case c.Timeout <= 0:
		return errors.New("-timeout: must be above 0")
	case c.MaxIDs < 0:
		return errors.New("-max-ids: must not be negative")
	}
	return nil
}

// isLoopback accepts "localhost" and loopback IP literals only: any other
// name could resolve anywhere.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// target is the full URL a mode asks for on a base URL.
func (c *config) target(base string) string {
	var q []string
	path := "/alloc"
	if c.Mode == modeSnowflake {
		path = "/snowflake"
	} else {
		q = append(q, "app_tag="+url.QueryEscape(c.Tag))
	}
	if c.Count > 0 {
		q = append(q, "count="+strconv.Itoa(c.Count))
	}
	if len(q) == 0 {
		return base + path
	}
	return base + path + "?" + strings.Join(q, "&")
}

// newTransport is tuned for many keep-alive connections to few hosts: one
// idle connection per client per host, no compression (the bodies are tiny
// and gzip would cost both sides CPU), no proxy from the environment, no
// HTTP/2 negotiation.
func newTransport(c *config) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          c.Clients * len(c.URLs),
		MaxIdleConnsPerHost:   c.Clients,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: c.Timeout,
		TLSHandshakeTimeout:   5 * time.Second,
	}
}

// client is one load goroutine. Its fields are its own until the run ends,
// so nothing on the hot loop is shared but two atomics.
type client struct {
	n    int
	hist *hdrhistogram.Histogram
	keep []*keeper // one per base URL

	requests, ok, ids int64 // measured phase
	warmupRequests    int64
	totalRequests     int64 // responses received, warm-up included
	byCode            map[int64]int64
	byStatus          map[int]int64
	transport         int64 // measured phase
	malformed         int64 // any phase
	order             int64 // any phase
	late              int64 // measured phase, open loop: sent a whole interval behind schedule
	examples          []string
	kept              int64
	dropped           bool // an answer's IDs were not kept (-max-ids)
	keepLimit         int64
}

func (c *client) note(format string, args ...any) {
	if len(c.examples) < maxExamples {
		c.examples = append(c.examples, fmt.Sprintf(format, args...))
	}
}

// shared is what the clients coordinate through.
type shared struct {
	stop      atomic.Bool
	claimed   atomic.Int64
	done      <-chan struct{} // closed when the run stops
	start     time.Time
	measureAt time.Time
	deadline  time.Time
}

// over reports whether the run has ended: a request failing then was cut
// by the end, and is no error.
func (sh *shared) over() bool { return sh.stop.Load() || !time.Now().Before(sh.deadline) }

// sleep waits d on the client's timer t, or less when the run stops first;
// it reports whether the run goes on.
func (sh *shared) sleep(t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-sh.done:
		t.Stop()
		return false
	}
}

// run performs one load run and returns its report. ctx cancels it early
// (the report then covers what was done).
func run(ctx context.Context, cfg config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tr := newTransport(&cfg)
	defer tr.CloseIdleConnections()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0 := cpuTime()
	start := time.Now()
	sh := &shared{done: ctx.Done(), start: start, measureAt: start.Add(cfg.Warmup)}
	deadline := sh.measureAt.Add(cfg.Duration)
	sh.deadline = deadline
	timer := time.AfterFunc(time.Until(deadline), func() {
		sh.stop.Store(true)
		cancel()
	})
	defer timer.Stop()
	var exMu sync.Mutex
	var exs []exchanger
	go func() { // the end, or an outside cancel, stops every client at once
		<-ctx.Done()
		sh.stop.Store(true)
		exMu.Lock()
		defer exMu.Unlock()
		for _, e := range exs {
			e.close()
		}
	}()

	targets := make([]string, len(cfg.URLs))
	for i, u := range cfg.URLs {
		targets[i] = cfg.target(u)
	}
	clients := make([]*client, cfg.Clients)
	var wg sync.WaitGroup
	for i := range clients {
		c := &client{
			n:        i,
			hist:     hdrhistogram.New(histLowest, histHighest, histDigits),
			byCode:   map[int64]int64{},
			byStatus: map[int]int64{},
		}
		if cfg.KeepIDs {
			c.keepLimit = cfg.MaxIDs / int64(cfg.Clients)
		}
		for range targets {
			c.keep = append(c.keep, newKeeper())
		}
		clients[i] = c
		var ex exchanger
		var err error
		if cfg.Client == "raw" {
			ex, err = newRawExchanger(targets, cfg.Timeout, deadline)
		} else {
			ex, err = newHTTPExchanger(ctx, tr, targets)
		}
		if err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
		exMu.Lock()
		exs = append(exs, ex)
		exMu.Unlock()
		if ctx.Err() != nil {
			ex.close() // the closer may have run already
		}
		wg.Go(func() { c.loop(&cfg, sh, ex) })
	}
	wg.Wait()
	end := time.Now()
	if end.After(deadline) {
		end = deadline
	}
	cpu := cpuTime() - cpu0
	return buildReport(&cfg, clients, start, sh.measureAt, end, cpu), nil
}

// loop sends one request at a time until the run stops: the next as soon
// as an answer is read (closed loop), or, with a rate, on a fixed schedule
// (open loop), so that latency can be measured below saturation.
func (c *client) loop(cfg *config, sh *shared, ex exchanger) {
	buf := make([]byte, 0, 4096)
	var resp response
	var one [1]int64
	n := len(cfg.URLs)
	var every time.Duration // open loop: this client's interval
	var next time.Time
	var tm *time.Timer
	if cfg.Rate > 0 {
		every = time.Duration(float64(cfg.Clients) / cfg.Rate * float64(time.Second))
		next = sh.start.Add(every * time.Duration(c.n) / time.Duration(cfg.Clients)) // clients staggered
		tm = time.NewTimer(every)
		defer tm.Stop()
	}
	for k := 0; ; k++ {
		if sh.stop.Load() {
			return
		}
		inst := (c.n + k) % n // round robin, clients staggered
		late := false
		if every > 0 {
			if !next.Before(sh.deadline) {
				return
			}
			if d := time.Until(next); d > 0 {
				if !sh.sleep(tm, d) {
					return
				}
			} else {
				late = -d >= every
			}
			next = next.Add(every)
		}
		// Latency counts from the actual send: a sleep that overshoots its
		// schedule is the load tool's own lateness, and a client that fell
		// a whole interval behind is counted as late instead.
		t0 := time.Now()
		measured := !t0.Before(sh.measureAt)
		if measured && late {
			c.late++
		}
		if measured && cfg.Requests > 0 && sh.claimed.Add(1) > cfg.Requests {
			return
		}
		status, ct, body, err := ex.exchange(inst, buf[:0])
		if cap(body) > cap(buf) {
			buf = body[:0] // keep the grown buffer
		}
		if err != nil {
			if sh.over() {
				return // cut by the end of the run: not an error
			}
			if measured {
				c.transport++
			}
			c.note("transport: %v", err)
			time.Sleep(10 * time.Millisecond) // a refused connection must not spin
			continue
		}
		lat := time.Since(t0)
		c.totalRequests++
		if measured {
			c.requests++
			_ = c.hist.RecordValue(max(int64(lat), histLowest)) // above 1 min: not recorded, still counted
			c.byStatus[status]++
		} else {
			c.warmupRequests++
		}
		if !strings.HasPrefix(ct, "application/json") {
			c.malformed++
			c.note("HTTP %d: Content-Type %q, want application/json", status, ct)
			continue
		}
		if err := parseBody(body, &resp); err != nil {
			c.malformed++
			c.note("HTTP %d: %v: %.200q", status, err, body)
			continue
		}
		if !resp.hasCode {
			c.malformed++
			c.note("HTTP %d: no resp_code: %.200q", status, body)
			continue
		}
		if resp.respCode != 0 {
			if measured {
				c.byCode[resp.respCode]++
			}
			if status == http.StatusOK {
				c.malformed++
				c.note("HTTP 200 with resp_code %d", resp.respCode)
			} else {
				c.note("HTTP %d resp_code %d: %.200q", status, resp.respCode, body)
			}
			continue
		}
		if status != http.StatusOK {
			c.malformed++
			c.note("HTTP %d with resp_code 0", status)
			continue
		}
		ids, err := checkSuccess(&resp, cfg.Mode, cfg.Count, &one)
		if err != nil {
			c.malformed++
			c.note("%v: %.200q", err, body)
			continue
		}
		if measured {
			c.ok++
			c.ids += int64(len(ids))
		}
		keep := cfg.KeepIDs && c.kept+int64(len(ids)) <= c.keepLimit
		if keep {
			c.kept += int64(len(ids))
		} else if cfg.KeepIDs {
			c.dropped = true
		}
		if ok, prev := c.keep[inst].add(ids, keep); !ok {
			c.order++
			c.note("order: client %d got %d from %s after %d", c.n, ids[0], cfg.URLs[inst], prev)
		}
	}
}

// readBody reads r to its end into b, growing it as needed.
func readBody(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			if len(b) >= maxBody {
				return b, fmt.Errorf("body larger than %d bytes", maxBody)
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func goInfo() (string, int) { return runtime.Version(), runtime.GOMAXPROCS(0) }
