// Package config is idalloc's configuration: config.json over the defaults,
// the IDALLOC_* environment overrides, the flags and the help text. Values
// are checked here by calling the domain's own checks (snowflake's layout,
// workerlease's cluster names, segment's limits), so that a bad value stops
// the start naming its key and where it was set, before anything is opened.
package config

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

	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/frontend"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
)

// Config is config.json. Durations are Go duration strings (Duration),
// which Validate checks so that a bad one is reported with its key.
type Config struct {
	HTTPAddr string `json:"http_addr"`
	Driver   string `json:"driver"`
	// DSN and AdminToken hold secrets: -print-config shows the DSN with
	// its password as *** and the token only as set or not (print.go).
	DSN        string `json:"dsn" print:"dsn"`
	AdminToken string `json:"admin_token" print:"secret"`
	// AllocAuth makes every ID call, on every front end, need a per-tag
	// access token allowed for its tag (docs/api.md §12); false (the default)
	// serves them to anyone.
	AllocAuth bool `json:"alloc_auth"`
	MaxBatch  int  `json:"max_batch"`
	// MaxRange is the largest count of /alloc?as=ranges (docs/api.md §12).
	MaxRange int `json:"max_range"`
	// MaxConns caps the open HTTP connections; at the cap a new one
	// closes a connection whose request's headers are incomplete or the
	// longest-idle keep-alive one, or is answered 503 and closed when
	// every one is in a request (frontend.Limiter). See
	// frontend.DefaultMaxConns.
	MaxConns int `json:"max_conns"`
	// RespAddr is where the Redis-protocol front end listens (docs/api.md §6);
	// empty turns it off.
	RespAddr string `json:"resp_addr"`
	// RespMaxConns caps its open connections, as MaxConns does HTTP's:
	// at the cap a new one closes a connection partway through a command
	// or the one idle the longest (waiting for a command), or is answered
	// "-ERR max number of clients reached" and closed when every one is
	// busy. See frontend.DefaultMaxConns.
	RespMaxConns int `json:"resp_max_conns"`
	// RespIdleTimeout closes a RESP connection that sends nothing for so
	// long. See DefaultRespIdleTimeout.
	RespIdleTimeout Duration `json:"resp_idle_timeout" min:"1s"`
	// RespCommandTimeout bounds a RESP command once begun: a connection
	// whose command is still incomplete so long after its first bytes is
	// answered an error and closed. See frontend.DefaultCommandTimeout.
	// Below a second a client on a slow link could be cut while sending a
	// large command.
	RespCommandTimeout Duration `json:"resp_command_timeout" min:"1s"`
	// RespMaxPending caps, in bytes, the answers a RESP connection may have
	// waiting for its client to read them; past it the connection is
	// closed. See frontend.DefaultMaxPending.
	RespMaxPending int `json:"resp_max_pending"`
	// RespMaxPendingTotal caps, in bytes, those answers across all RESP
	// connections; past it the connection holding the most is closed. See
	// frontend.DefaultMaxPendingTotal.
	RespMaxPendingTotal int64 `json:"resp_max_pending_total"`
	// GRPCAddr is where the gRPC front end listens (docs/api.md §14);
	// empty turns it off.
	GRPCAddr string `json:"grpc_addr"`
	// GRPCMaxConns caps its open connections, as MaxConns does HTTP's: at
	// the cap a new one closes a connection still in its HTTP/2 handshake
	// or the one idle the longest (no call in progress), or is sent a
	// GOAWAY and closed when every one is in a call. See
	// frontend.DefaultMaxConns.
	GRPCMaxConns int `json:"grpc_max_conns"`
	// GRPCMaxStreams caps the calls in progress on one gRPC connection
	// (HTTP/2's concurrent streams). See frontend.DefaultMaxStreams.
	GRPCMaxStreams int      `json:"grpc_max_streams"`
	ShutdownDrain  Duration `json:"shutdown_drain"`
	// ShutdownTimeout bounds the whole stop after SIGTERM: the drain, the
	// HTTP shutdown, the lease release and the give-back. See
	// DefaultShutdownTimeout.
	ShutdownTimeout Duration        `json:"shutdown_timeout"`
	Segment         SegmentConfig   `json:"segment"`
	Snowflake       SnowflakeConfig `json:"snowflake"`
	Lease           LeaseConfig     `json:"lease"`
	Dated           DatedConfig     `json:"dated"`
	Region          RegionConfig    `json:"region"`
	Metrics         MetricsConfig   `json:"metrics"`
}

// RegionConfig is the "region" object of config.json: sites that share no
// database (docs/api.md §13). Each region has its own store, and its
// instances' segment IDs are the numbers ≡ id (mod count); its snowflake
// worker IDs are one of count disjoint ranges. Every instance on one
// database must say the same: the database records it, and refuses
// another (segment.CheckRegion).
type RegionConfig struct {
	// Count is how many regions there are; 1 (the default) is none.
	Count int64 `json:"count"`
	// ID is this instance's region, from 0 to Count − 1.
	ID int64 `json:"id"`
}

// Region is the segment allocator's region of r.
func (r RegionConfig) Region() segment.Region { return segment.Region{Count: r.Count, ID: r.ID} }

// MetricsConfig is the "metrics" object of config.json: what GET /metrics
// shows (docs/api.md §13).
type MetricsConfig struct {
	// MaxTagSeries caps the tags with per-tag series of their own, the
	// busiest; the others are summed under app_tag="_other", so a scrape
	// stays small whatever the tag count. See DefaultMaxTagSeries.
	MaxTagSeries int `json:"max_tag_series"`
}

// DefaultMaxTagSeries is metrics.max_tag_series' default: a scrape of
// about 220-240 KB of text, 13-16 KB gzipped, with tags of 10 characters,
// at any tag count. It is the metrics' own default
// (metrics.DefaultMaxTagSeries); a test of main holds the two equal.
const DefaultMaxTagSeries = 1000

// maxMaxTagSeries bounds metrics.max_tag_series: 100,000 tags, the most
// an instance is built for, each with series of its own, make a scrape of
// some 21 MB of text.
const maxMaxTagSeries = 100_000

// DatedConfig is the "dated" object of config.json: business numbers
// (docs/api.md §11).
type DatedConfig struct {
	// MaxClockSkew is how far this instance's clock may be from the
	// store's, measured at every fetch, while it serves dated tags; past
	// it they are refused (503, kind unavailable) and other tags served.
	// See segment.DefaultMaxClockSkew. Its minimum: the skew is measured
	// with an error of its own (the store's clock has milliseconds, MySQL
	// reads it at its statement's start, and half a round trip is not
	// counted); a bound within that error would refuse dated tags for a
	// slow fetch, not for a clock that is off. 0 would read as segment's
	// default, 1s: not what "0s" says.
	MaxClockSkew Duration `json:"max_clock_skew" min:"100ms"`
}

// LeaseConfig is the "lease" object of config.json: where worker-ID leases
// (this instance's own and /workerid's) are kept (docs/api.md §9).
type LeaseConfig struct {
	// Driver is "sql" (the main store, the default), "redis" or "etcd".
	Driver string `json:"driver"`
	// DSN is the lease store's address for redis (a redis:// URL) and etcd
	// (comma-separated endpoints); empty for sql, which uses dsn.
	DSN string `json:"dsn" print:"dsn"`
}

// DefaultShutdownTimeout is the default of shutdown_timeout: under the 30 s
// that docker compose (stop_grace_period) and Kubernetes
// (terminationGracePeriodSeconds) wait before SIGKILL, with room for the
// watchdog's second (frontend.WatchSignals) and the process's exit.
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

// maxMaxStreams bounds grpc_max_streams: past it one connection could
// hold a goroutine per stream by the thousands, what the cap of
// connections is there to prevent.
const maxMaxStreams = 10_000

// maxMaxConns bounds max_conns, resp_max_conns and grpc_max_conns: far above any real need, below the point
// where the cap stops protecting anything.
const maxMaxConns = 1_000_000

// SegmentConfig is the "segment" object of config.json.
type SegmentConfig struct {
	MaxStep    int64    `json:"max_step"`
	TagRefresh Duration `json:"tag_refresh" min:"100ms"`
}

// SnowflakeConfig is the "snowflake" object of config.json.
type SnowflakeConfig struct {
	Enabled bool   `json:"enabled"`
	Cluster string `json:"cluster"`
	// Layout is "default" (63-bit IDs) or "js53" (IDs at most 2^53-1,
	// docs/api.md §2).
	Layout     string   `json:"layout"`
	Epoch      string   `json:"epoch"`
	WorkerBits int      `json:"worker_bits"`
	LeaseTTL   Duration `json:"lease_ttl" min:"1s"`
	// MaxDriftBlock's minimum: 0 would mean the generator's default, 10ms,
	// not what "0s" says.
	MaxDriftBlock       Duration `json:"max_drift_block" min:"1ms"`
	MaxDriftError       Duration `json:"max_drift_error"`
	RandomSequenceStart *bool    `json:"random_sequence_start"`
}

// Settings is Config checked and converted, with defaults filled in.
type Settings struct {
	Config
	// Epoch is snowflake.epoch parsed.
	Epoch time.Time
	// Layout is the snowflake layout of snowflake.layout, epoch and
	// worker_bits, not yet held to the 10-year rule of a new deployment.
	Layout snowflake.Layout
	// RandomStart is snowflake.random_sequence_start, true when not given.
	RandomStart bool
	sources     sources // where the values came from, for errors found later
}

// Origin names where key's value came from (an environment variable, or the
// config file), to head an error about it found after loading, such as a
// port already in use.
func (s Settings) Origin(key string) string { return s.sources.origin(key) }

// Default is the configuration without a file: the embedded SQLite store
// and the defaults of every key.
func Default() Config {
	return Config{
		HTTPAddr:            ":8880",
		Driver:              drivers.SQLite,
		DSN:                 "idalloc.db",
		MaxBatch:            segment.DefaultMaxBatch,
		MaxRange:            segment.DefaultMaxRange,
		MaxConns:            frontend.DefaultMaxConns,
		RespMaxConns:        frontend.DefaultMaxConns,
		RespIdleTimeout:     durationOf(DefaultRespIdleTimeout),
		RespCommandTimeout:  durationOf(frontend.DefaultCommandTimeout.String()),
		RespMaxPending:      frontend.DefaultMaxPending,
		RespMaxPendingTotal: frontend.DefaultMaxPendingTotal,
		GRPCMaxConns:        frontend.DefaultMaxConns,
		GRPCMaxStreams:      frontend.DefaultMaxStreams,
		ShutdownDrain:       durationOf("5s"),
		ShutdownTimeout:     durationOf(DefaultShutdownTimeout),
		Segment:             SegmentConfig{MaxStep: segment.DefaultMaxStep, TagRefresh: durationOf("10s")},
		Snowflake: SnowflakeConfig{
			Enabled: true, Cluster: "default", Layout: LayoutDefault, Epoch: "2026-01-01T00:00:00Z", WorkerBits: 10,
			LeaseTTL: durationOf("30s"), MaxDriftBlock: durationOf("10ms"), MaxDriftError: durationOf("1s"),
		},
		Lease:   LeaseConfig{Driver: drivers.LeaseSQL},
		Dated:   DatedConfig{MaxClockSkew: durationOf(segment.DefaultMaxClockSkew.String())},
		Region:  RegionConfig{Count: 1},
		Metrics: MetricsConfig{MaxTagSeries: DefaultMaxTagSeries},
	}
}

// Load reads path over the defaults (a missing file is an error only
// when required, that is when -config named it), applies the IDALLOC_*
// variables of environ (os.Environ's form; env.go) and validates. Every
// error names the key at fault and where its value came from: the
// environment variable, or the file; an IDALLOC_* variable that names no
// key is an error too, naming it and the nearest that does.
func Load(path string, required bool, environ []string) (Settings, error) {
	c := Default()
	src := sources{path: path, env: map[string]string{}}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := parseConfig(data, &c); err != nil {
			return Settings{}, fmt.Errorf("config %s: %w", path, err)
		}
		src.read, src.file = true, fileKeys(data, reflect.TypeFor[Config](), "")
	case required:
		return Settings{}, fmt.Errorf("flag -config: %w", err)
	case !errors.Is(err, os.ErrNotExist):
		return Settings{}, fmt.Errorf("config: %w", err)
	}
	if err := applyEnv(&c, environ, &src); err != nil {
		return Settings{}, err
	}
	// worker_bits' default is the layout's: 10 of 22 bits, or 6 of js53's 12.
	if key := "snowflake.worker_bits"; c.Snowflake.Layout == LayoutJS53 && !src.file[key] && src.env[key] == "" {
		c.Snowflake.WorkerBits = snowflake.JS53WorkerBits
	}
	s, err := c.Validate()
	if err != nil {
		return Settings{}, src.blame(err)
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
		if isObject(f.Type) {
			if key, known := unknownKey(obj[name], f.Type, prefix+name+"."); key != "" {
				return key, known
			}
		}
	}
	return "", nil
}

// fileKeys lists the keys that data, a JSON object parseConfig accepted,
// sets (null sets nothing), each dotted and spelled as Config's json tag
// whatever its case in the file, as keys of a set.
func fileKeys(data []byte, t reflect.Type, prefix string) map[string]bool {
	keys := map[string]bool{}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return keys
	}
	for name, raw := range obj {
		f, ok := jsonField(t, name)
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if isObject(f.Type) {
			maps.Copy(keys, fileKeys(raw, f.Type, prefix+tag+"."))
			continue
		}
		keys[prefix+tag] = true
	}
	return keys
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
