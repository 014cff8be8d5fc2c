package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

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
