package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/idalloc/idalloc/resp"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Config is config.json. Durations are Go duration strings; they are kept as
// strings here so a bad one is reported with its key.
type Config struct {
	HTTPAddr   string `json:"http_addr"`
	Driver     string `json:"driver"`
	DSN        string `json:"dsn"`
	AdminToken string `json:"admin_token"`
	MaxBatch   int    `json:"max_batch"`
	// MaxConns caps the open HTTP connections; at the cap a new one
	// closes the longest-idle keep-alive connection, or waits when none is
	// idle (conns.go). See DefaultMaxConns.
	MaxConns int `json:"max_conns"`
	// RespAddr is where the Redis-protocol front end listens (API.md §6);
	// empty turns it off.
	RespAddr string `json:"resp_addr"`
	// RespMaxConns caps its open connections; over the cap a new one is
	// answered an error and closed. See DefaultMaxConns.
	RespMaxConns int `json:"resp_max_conns"`
	// RespIdleTimeout closes a RESP connection that sends nothing for so
	// long. See DefaultRespIdleTimeout.
	RespIdleTimeout string `json:"resp_idle_timeout"`
	// RespMaxPending caps, in bytes, the answers a RESP connection may have
	// waiting for its client to read them; past it the connection is
	// closed. See resp.DefaultMaxPending.
	RespMaxPending int `json:"resp_max_pending"`
	// RespMaxPendingTotal caps, in bytes, those answers across all RESP
	// connections; past it the connection holding the most is closed. See
	// resp.DefaultMaxPendingTotal.
	RespMaxPendingTotal int64  `json:"resp_max_pending_total"`
	ShutdownDrain       string `json:"shutdown_drain"`
	// ShutdownTimeout bounds the whole stop after SIGTERM: the drain, the
	// HTTP shutdown, the lease release and the give-back. See
	// DefaultShutdownTimeout.
	ShutdownTimeout string          `json:"shutdown_timeout"`
	Segment         SegmentConfig   `json:"segment"`
	Snowflake       SnowflakeConfig `json:"snowflake"`
	Lease           LeaseConfig     `json:"lease"`
}

// LeaseConfig is the "lease" object of config.json: where worker-ID leases
// (this instance's own and /workerid's) are kept (API.md §9).
type LeaseConfig struct {
	// Driver is "sql" (the main store, the default), "redis" or "etcd".
	Driver string `json:"driver"`
	// DSN is the lease store's address for redis (a redis:// URL) and etcd
	// (comma-separated endpoints); empty for sql, which uses dsn.
	DSN string `json:"dsn"`
}

// DefaultShutdownTimeout is the default of shutdown_timeout: under the 30 s
// that docker compose (stop_grace_period) and Kubernetes
// (terminationGracePeriodSeconds) wait before SIGKILL, with room for the
// watchdog's second (see stopWatchdogSlack) and the process's exit.
const DefaultShutdownTimeout = "25s"

// DefaultRespIdleTimeout is the default of resp_idle_timeout: long enough
// for a client's pool to keep connections between bursts, short enough
// that abandoned ones do not pile up toward resp_max_conns.
const DefaultRespIdleTimeout = "5m"

// resp_max_pending's bounds: below 256 KiB a client that reads could be
// cut for a moment's delay in reading a large answer (IDS of 10,000 IDs is
// 260 KB); above 1 GiB the cap stops protecting anything.
const (
	minRespMaxPending = 256 << 10
	maxRespMaxPending = 1 << 30
)

// maxRespMaxPendingTotal bounds resp_max_pending_total (whose minimum is
// resp_max_pending: one connection must be able to hold what that allows
// it): above 1 TiB it bounds nothing a machine has.
const maxRespMaxPendingTotal = 1 << 40

// maxMaxConns bounds max_conns and resp_max_conns: far above any real need, below the point
// where the cap stops protecting anything.
const maxMaxConns = 1_000_000

// SegmentConfig is the "segment" object of config.json.
type SegmentConfig struct {
	MaxStep    int64  `json:"max_step"`
	TagRefresh string `json:"tag_refresh"`
}

// SnowflakeConfig is the "snowflake" object of config.json.
type SnowflakeConfig struct {
	Enabled             bool   `json:"enabled"`
	Cluster             string `json:"cluster"`
	Epoch               string `json:"epoch"`
	WorkerBits          int    `json:"worker_bits"`
	LeaseTTL            string `json:"lease_ttl"`
	MaxDriftBlock       string `json:"max_drift_block"`
	MaxDriftError       string `json:"max_drift_error"`
	RandomSequenceStart *bool  `json:"random_sequence_start"`
}

// settings is Config checked and converted, with defaults filled in.
type settings struct {
	Config
	shutdownDrain   time.Duration
	shutdownTimeout time.Duration
	respIdleTimeout time.Duration
	tagRefresh      time.Duration
	epoch           time.Time
	leaseTTL        time.Duration
	driftBlock      time.Duration
	driftError      time.Duration
	randomStart     bool
	sources         sources // where the values came from, for errors found later
}

func defaultConfig() Config {
	return Config{
		HTTPAddr:            ":8880",
		Driver:              "sqlite",
		DSN:                 "idalloc.db",
		MaxBatch:            segment.DefaultMaxBatch,
		MaxConns:            DefaultMaxConns,
		RespMaxConns:        DefaultMaxConns,
		RespIdleTimeout:     DefaultRespIdleTimeout,
		RespMaxPending:      resp.DefaultMaxPending,
		RespMaxPendingTotal: resp.DefaultMaxPendingTotal,
		ShutdownDrain:       "5s",
		ShutdownTimeout:     DefaultShutdownTimeout,
		Segment:             SegmentConfig{MaxStep: segment.DefaultMaxStep, TagRefresh: "10s"},
		Snowflake: SnowflakeConfig{
			Enabled: true, Cluster: "default", Epoch: "2026-01-01T00:00:00Z", WorkerBits: 10,
			LeaseTTL: "30s", MaxDriftBlock: "10ms", MaxDriftError: "1s",
		},
		Lease: LeaseConfig{Driver: "sql"},
	}
}

// envOverrides are the IDALLOC_* environment variables, each replacing one
// key of config.json when set and not empty. loadConfig applies them and
// the usage (help.go) lists them, both from this table, so the two cannot
// drift apart.
var envOverrides = []struct {
	name, key string
	field     func(*Config) *string
}{
	{"IDALLOC_HTTP_ADDR", "http_addr", func(c *Config) *string { return &c.HTTPAddr }},
	{"IDALLOC_RESP_ADDR", "resp_addr", func(c *Config) *string { return &c.RespAddr }},
	{"IDALLOC_DRIVER", "driver", func(c *Config) *string { return &c.Driver }},
	{"IDALLOC_DSN", "dsn", func(c *Config) *string { return &c.DSN }},
	{"IDALLOC_ADMIN_TOKEN", "admin_token", func(c *Config) *string { return &c.AdminToken }},
	{"IDALLOC_LEASE_DRIVER", "lease.driver", func(c *Config) *string { return &c.Lease.Driver }},
	{"IDALLOC_LEASE_DSN", "lease.dsn", func(c *Config) *string { return &c.Lease.DSN }},
}

// loadConfig reads path over the defaults (a missing file is an error only
// when required, that is when -config named it), applies the IDALLOC_*
// environment overrides and validates. Every error names the key at fault
// and where its value came from: the environment variable, or the file.
func loadConfig(path string, required bool, getenv func(string) string) (settings, error) {
	c := defaultConfig()
	src := sources{path: path, env: map[string]string{}}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := parseConfig(data, &c); err != nil {
			return settings{}, fmt.Errorf("config %s: %w", path, err)
		}
	case required:
		return settings{}, fmt.Errorf("flag -config: %w", err)
	case !errors.Is(err, os.ErrNotExist):
		return settings{}, fmt.Errorf("config: %w", err)
	}
	for _, o := range envOverrides {
		if v := getenv(o.name); v != "" {
			*o.field(&c) = v
			src.env[o.key] = o.name
		}
	}
	s, err := c.validate()
	if err != nil {
		return settings{}, src.blame(err)
	}
	s.sources = src
	return s, nil
}

func parseConfig(data []byte, c *Config) error {
	// encoding/json names an unknown key without the object it is in
	// (`unknown field "maxstep"`); look first, so the error says
	// "segment.maxstep" and which keys that object has.
	if key, known := unknownKey(data, reflect.TypeFor[Config](), ""); key != "" {
		return keyErr(key, "unknown key; the keys there are %s", strings.Join(known, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return jsonError(data, err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// unknownKey returns the dotted name of the first key (in sorted order, so
// the answer does not change between runs) of the JSON object data, or of an
// object nested in it, that struct type t has no field for, with the keys t
// has; "" when there is none or data is not an object, which the decoder
// then reports. Keys match field tags regardless of case, as in
// encoding/json.
func unknownKey(data []byte, t reflect.Type, prefix string) (string, []string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return "", nil
	}
	names := slices.Sorted(maps.Keys(obj))
	for _, name := range names {
		f, ok := jsonField(t, name)
		if !ok {
			var known []string
			for i := range t.NumField() {
				if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
					known = append(known, tag)
				}
			}
			return prefix + name, known
		}
		if f.Type.Kind() == reflect.Struct {
			if key, known := unknownKey(obj[name], f.Type, prefix+name+"."); key != "" {
				return key, known
			}
		}
	}
	return "", nil
}

// jsonField finds the field of struct type t that encoding/json would decode
// key into.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "-" && strings.EqualFold(tag, key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func (c Config) validate() (settings, error) {
	s := settings{Config: c, randomStart: true}
	if c.Snowflake.RandomSequenceStart != nil {
		s.randomStart = *c.Snowflake.RandomSequenceStart
	}
	if c.HTTPAddr == "" {
		return s, keyErr("http_addr", `must not be empty`)
	}
	if c.Driver != "sqlite" && c.Driver != "mysql" {
		return s, keyErr("driver", `%q is not "sqlite" or "mysql"`, c.Driver)
	}
	if c.DSN == "" {
		return s, keyErr("dsn", `must not be empty`)
	}
	switch {
	case c.Lease.Driver != "sql" && c.Lease.Driver != "redis" && c.Lease.Driver != "etcd":
		return s, keyErr("lease.driver", `%q is not "sql", "redis" or "etcd"`, c.Lease.Driver)
	case c.Lease.Driver == "sql" && c.Lease.DSN != "":
		return s, keyErr("lease.dsn", `must be empty with lease.driver "sql", which keeps leases in the main store (dsn)`)
	case c.Lease.Driver != "sql" && c.Lease.DSN == "":
		return s, keyErr("lease.dsn", `must name the %s server with lease.driver %q`, c.Lease.Driver, c.Lease.Driver)
	}
	if c.MaxBatch < 1 || c.MaxBatch > segment.MaxMaxBatch {
		return s, keyErr("max_batch", `%d is outside 1..%d`, c.MaxBatch, segment.MaxMaxBatch)
	}
	if c.MaxConns < 1 || c.MaxConns > maxMaxConns {
		return s, keyErr("max_conns", `%d is outside 1..%d`, c.MaxConns, maxMaxConns)
	}
	if c.RespMaxConns < 1 || c.RespMaxConns > maxMaxConns {
		return s, keyErr("resp_max_conns", `%d is outside 1..%d`, c.RespMaxConns, maxMaxConns)
	}
	if c.RespMaxPending < minRespMaxPending || c.RespMaxPending > maxRespMaxPending {
		return s, keyErr("resp_max_pending", `%d is outside %d..%d (bytes)`, c.RespMaxPending, minRespMaxPending, maxRespMaxPending)
	}
	if c.RespMaxPendingTotal < int64(c.RespMaxPending) || c.RespMaxPendingTotal > maxRespMaxPendingTotal {
		return s, keyErr("resp_max_pending_total", `%d is outside resp_max_pending (%d)..%d (bytes)`, c.RespMaxPendingTotal, c.RespMaxPending, int64(maxRespMaxPendingTotal))
	}
	if c.RespAddr != "" && c.RespAddr == c.HTTPAddr {
		return s, keyErr("resp_addr", `%q is http_addr too; give the Redis protocol a port of its own (":6380")`, c.RespAddr)
	}
	if c.Segment.MaxStep < 1 {
		return s, keyErr("segment.max_step", `%d must be at least 1`, c.Segment.MaxStep)
	}
	if c.Snowflake.WorkerBits < 1 || c.Snowflake.WorkerBits > 21 {
		return s, keyErr("snowflake.worker_bits", `%d is outside 1..21`, c.Snowflake.WorkerBits)
	}
	if !workerlease.ValidCluster(c.Snowflake.Cluster) {
		return s, keyErr("snowflake.cluster", `%q must match ^[A-Za-z0-9_.:-]{1,64}$`, c.Snowflake.Cluster)
	}
	epoch, err := time.Parse(time.RFC3339, c.Snowflake.Epoch)
	if err != nil {
		return s, keyErr("snowflake.epoch", `%q is not an RFC 3339 time`, c.Snowflake.Epoch)
	}
	s.epoch = epoch
	for _, d := range []struct {
		key string
		val string
		dst *time.Duration
		min time.Duration
	}{
		{"shutdown_drain", c.ShutdownDrain, &s.shutdownDrain, 0},
		{"shutdown_timeout", c.ShutdownTimeout, &s.shutdownTimeout, 0},
		{"resp_idle_timeout", c.RespIdleTimeout, &s.respIdleTimeout, time.Second},
		{"segment.tag_refresh", c.Segment.TagRefresh, &s.tagRefresh, 100 * time.Millisecond},
		{"snowflake.lease_ttl", c.Snowflake.LeaseTTL, &s.leaseTTL, time.Second},
		// 0 would mean the generator's default, 10ms: not what "0s" says.
		{"snowflake.max_drift_block", c.Snowflake.MaxDriftBlock, &s.driftBlock, time.Millisecond},
		{"snowflake.max_drift_error", c.Snowflake.MaxDriftError, &s.driftError, 0},
	} {
		v, err := time.ParseDuration(d.val)
		if err != nil {
			return s, keyErr(d.key, "%q is not a duration like \"5s\"", d.val)
		}
		if v < d.min {
			return s, keyErr(d.key, "%s is below the minimum %s", v, d.min)
		}
		*d.dst = v
	}
	// The drain is part of the stop; what is left after it is shared by
	// the HTTP shutdown and the hand-back (shutdown.go).
	if s.shutdownTimeout <= s.shutdownDrain {
		return s, keyErr("shutdown_timeout", `%s must exceed shutdown_drain (%s)`, s.shutdownTimeout, s.shutdownDrain)
	}
	if s.driftError < s.driftBlock {
		return s, keyErr("snowflake.max_drift_error", `must not be below snowflake.max_drift_block`)
	}
	// The generator's own checks, reported by key rather than at start: an
	// epoch after now, or so early that the time bits run out within 10
	// years.
	if _, err := snowflake.New(snowflake.Settings{Epoch: epoch, WorkerBits: c.Snowflake.WorkerBits,
		MaxDriftBlock: s.driftBlock, MaxDriftError: s.driftError}); err != nil {
		key := "snowflake.max_drift_error"
		if errors.Is(err, snowflake.ErrInvalidLayout) || errors.Is(err, snowflake.ErrLayoutTooShort) {
			key = "snowflake.epoch"
		}
		return s, keyErr(key, "%w", err)
	}
	return s, nil
}
