package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Config is config.json. Durations are Go duration strings; they are kept as
// strings here so a bad one is reported with its key.
type Config struct {
	HTTPAddr      string          `json:"http_addr"`
	Driver        string          `json:"driver"`
	DSN           string          `json:"dsn"`
	AdminToken    string          `json:"admin_token"`
	MaxBatch      int             `json:"max_batch"`
	ShutdownDrain string          `json:"shutdown_drain"`
	Segment       SegmentConfig   `json:"segment"`
	Snowflake     SnowflakeConfig `json:"snowflake"`
}

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
	shutdownDrain time.Duration
	tagRefresh    time.Duration
	epoch         time.Time
	leaseTTL      time.Duration
	driftBlock    time.Duration
	driftError    time.Duration
	randomStart   bool
}

func defaultConfig() Config {
	return Config{
		HTTPAddr:      ":8880",
		Driver:        "sqlite",
		DSN:           "idalloc.db",
		MaxBatch:      1000,
		ShutdownDrain: "5s",
		Segment:       SegmentConfig{MaxStep: segment.DefaultMaxStep, TagRefresh: "10s"},
		Snowflake: SnowflakeConfig{
			Enabled: true, Cluster: "default", Epoch: "2026-01-01T00:00:00Z", WorkerBits: 10,
			LeaseTTL: "30s", MaxDriftBlock: "10ms", MaxDriftError: "1s",
		},
	}
}

// loadConfig reads path over the defaults (a missing file is an error only
// when required), applies the IDALLOC_* environment overrides and validates.
// Every error names the key at fault.
func loadConfig(path string, required bool, getenv func(string) string) (settings, error) {
	c := defaultConfig()
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := parseConfig(data, &c); err != nil {
			return settings{}, fmt.Errorf("config %s: %w", path, err)
		}
	case required || !errors.Is(err, os.ErrNotExist):
		return settings{}, fmt.Errorf("config: %w", err)
	}
	for env, field := range map[string]*string{
		"IDALLOC_HTTP_ADDR":   &c.HTTPAddr,
		"IDALLOC_DRIVER":      &c.Driver,
		"IDALLOC_DSN":         &c.DSN,
		"IDALLOC_ADMIN_TOKEN": &c.AdminToken,
	} {
		if v := getenv(env); v != "" {
			*field = v
		}
	}
	s, err := c.validate()
	if err != nil {
		return settings{}, fmt.Errorf("config %s: %w", path, err)
	}
	return s, nil
}

func parseConfig(data []byte, c *Config) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("key %q: want a %s, got %s", te.Field, te.Type, te.Value)
		}
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func (c Config) validate() (settings, error) {
	s := settings{Config: c, randomStart: true}
	if c.Snowflake.RandomSequenceStart != nil {
		s.randomStart = *c.Snowflake.RandomSequenceStart
	}
	if c.HTTPAddr == "" {
		return s, errors.New(`key "http_addr": must not be empty`)
	}
	if c.Driver != "sqlite" && c.Driver != "mysql" {
		return s, fmt.Errorf(`key "driver": %q is not "sqlite" or "mysql"`, c.Driver)
	}
	if c.DSN == "" {
		return s, errors.New(`key "dsn": must not be empty`)
	}
	if c.MaxBatch < 1 || c.MaxBatch > 100_000 {
		return s, fmt.Errorf(`key "max_batch": %d is outside 1..100000`, c.MaxBatch)
	}
	if c.Segment.MaxStep < 1 {
		return s, fmt.Errorf(`key "segment.max_step": %d must be at least 1`, c.Segment.MaxStep)
	}
	if c.Snowflake.WorkerBits < 1 || c.Snowflake.WorkerBits > 21 {
		return s, fmt.Errorf(`key "snowflake.worker_bits": %d is outside 1..21`, c.Snowflake.WorkerBits)
	}
	if !workerlease.ValidCluster(c.Snowflake.Cluster) {
		return s, fmt.Errorf(`key "snowflake.cluster": %q must match ^[A-Za-z0-9_.:-]{1,64}$`, c.Snowflake.Cluster)
	}
	epoch, err := time.Parse(time.RFC3339, c.Snowflake.Epoch)
	if err != nil {
		return s, fmt.Errorf(`key "snowflake.epoch": %q is not an RFC 3339 time`, c.Snowflake.Epoch)
	}
	s.epoch = epoch
	for _, d := range []struct {
		key string
		val string
		dst *time.Duration
		min time.Duration
	}{
		{"shutdown_drain", c.ShutdownDrain, &s.shutdownDrain, 0},
		{"segment.tag_refresh", c.Segment.TagRefresh, &s.tagRefresh, 100 * time.Millisecond},
		{"snowflake.lease_ttl", c.Snowflake.LeaseTTL, &s.leaseTTL, time.Second},
		// 0 would mean the generator's default, 10ms: not what "0s" says.
		{"snowflake.max_drift_block", c.Snowflake.MaxDriftBlock, &s.driftBlock, time.Millisecond},
		{"snowflake.max_drift_error", c.Snowflake.MaxDriftError, &s.driftError, 0},
	} {
		v, err := time.ParseDuration(d.val)
		if err != nil {
			return s, fmt.Errorf("key %q: %q is not a duration like \"5s\"", d.key, d.val)
		}
		if v < d.min {
			return s, fmt.Errorf("key %q: %s is below the minimum %s", d.key, v, d.min)
		}
		*d.dst = v
	}
	if s.driftError < s.driftBlock {
		return s, errors.New(`key "snowflake.max_drift_error": must not be below snowflake.max_drift_block`)
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
		return s, fmt.Errorf("key %q: %w", key, err)
	}
	return s, nil
}
