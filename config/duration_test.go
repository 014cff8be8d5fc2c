package config

import (
	"encoding/json"
	"testing"
	"time"
)

// TestDurationKeys: the duration keys and their minimums, each read from
// its field's min tag.
func TestDurationKeys(t *testing.T) {
	want := map[string]time.Duration{
		"resp_idle_timeout": time.Second, "resp_command_timeout": time.Second,
		"shutdown_drain": 0, "shutdown_timeout": 0, "segment.tag_refresh": 100 * time.Millisecond,
		"snowflake.lease_ttl": time.Second, "snowflake.max_drift_block": time.Millisecond,
		"snowflake.max_drift_error": 0, "dated.max_clock_skew": 100 * time.Millisecond,
	}
	if len(durationKeys) != len(want) {
		t.Errorf("%d duration keys, want %d", len(durationKeys), len(want))
	}
	for _, k := range durationKeys {
		if m, ok := want[k.Key]; !ok || k.min != m {
			t.Errorf("key %q: minimum %v, want %v (a duration key: %v)", k.Key, k.min, m, ok)
		}
	}
}

// TestDuration: a Duration keeps its text as written, for -print-config,
// and reads it as a duration; a text that is none is kept for Validate.
func TestDuration(t *testing.T) {
	cases := []struct {
		json, text string
		d          time.Duration
		ok         bool
	}{
		{`"5m"`, "5m", 5 * time.Minute, true},
		{`"5000ms"`, "5000ms", 5 * time.Second, true},
		{`"soon"`, "soon", 0, false},
		{`null`, "1s", time.Second, true}, // null leaves the value as it is
	}
	for _, c := range cases {
		d := durationOf("1s")
		if err := json.Unmarshal([]byte(c.json), &d); err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		out, _ := json.Marshal(d)
		if d.String() != c.text || d.Duration() != c.d || d.ok != c.ok || string(out) != `"`+c.text+`"` {
			t.Errorf("%s: %q %v %v %s, want %q %v %v", c.json, d.String(), d.Duration(), d.ok, out, c.text, c.d, c.ok)
		}
	}
	var d Duration
	if err := json.Unmarshal([]byte(`5`), &d); err == nil {
		t.Errorf("a JSON number: no error, want encoding/json's for a string")
	}
}
