package config

import (
	"strings"
	"testing"
	"time"
)

// Any bytes as config.json: an error of one line, or a config that passed
// validation; never a panic.
func FuzzConfig(f *testing.F) {
	f.Add([]byte(`{"http_addr":":8880","driver":"sqlite","dsn":"x.db"}`))
	f.Add([]byte(`{"segment":{"max_step":5,"tag_refresh":"1s"},"snowflake":{"worker_bits":3,"epoch":"2020-01-01T00:00:00Z"}}`))
	f.Add([]byte(`{"snowflake":{"lease_ttl":"-1s"}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"max_batch":1e400}`))
	f.Add([]byte(`{"segment":{"maxstep":1},"snowflake":{"x":{}}}`))
	f.Add([]byte(`{"max_conns":1,"shutdown_drain":"1s","shutdown_timeout":"2s"}`))
	f.Add([]byte(`{"dated":{"max_clock_skew":"250ms"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Default()
		if err := parseConfig(data, &c); err != nil {
			return
		}
		s, err := c.Validate()
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if s.MaxBatch < 1 || s.Segment.MaxStep < 1 || s.Snowflake.LeaseTTL.Duration() <= 0 || s.Snowflake.MaxDriftError.Duration() < s.Snowflake.MaxDriftBlock.Duration() ||
			s.MaxConns < 1 || s.ShutdownTimeout.Duration() <= s.ShutdownDrain.Duration() || s.Dated.MaxClockSkew.Duration() < 100*time.Millisecond {
			t.Fatalf("validated config out of range: %+v", s)
		}
	})
}
