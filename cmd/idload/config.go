package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
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
