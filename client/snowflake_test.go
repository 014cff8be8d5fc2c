//go:build unix

package client

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestSnowflakeBuffered(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), map[string]any{"snowflake": map[string]any{"enabled": true}}))
	srv.waitSnowflake(t)
	tr := newCounting()
	const maxAge = 100 * time.Millisecond
	c := newTestClient(t, Config{URLs: []string{srv.URL}, SnowflakeMaxAge: maxAge, HTTPClient: &http.Client{Transport: tr}})
	ctx := t.Context()
	layout := defaultLayout(t)

	lists := collect(t, 4, 3000, func() (int64, error) {
		id, err := c.Snowflake(ctx)
		if err != nil {
			return 0, err
		}
		// An ID may be at most maxAge old when handed out (plus the
		// answer's own time on the wire, and a millisecond of rounding).
		p, err := layout.Decompose(id)
		if err != nil {
			return 0, err
		}
		if age := time.Since(time.UnixMilli(p.TimestampMS)); age > maxAge+20*time.Millisecond {
			return 0, errors.New("snowflake ID " + p.Time.String() + " is " + age.String() + " old")
		}
		return id, nil
	})
	n := checkUnique(t, lists...)
	if got := tr.count("/snowflake"); got == 0 || got > n/10 {
		t.Errorf("%d snowflake IDs took %d requests; want them batched", n, got)
	}
	// An idle spell longer than maxAge: the next ID is fresh, not from the
	// old batch.
	for range 3 {
		time.Sleep(2 * maxAge)
		id, err := c.Snowflake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := layout.Decompose(id)
		if age := time.Since(time.UnixMilli(p.TimestampMS)); age > maxAge {
			t.Errorf("after an idle spell: an ID %v old, want at most %v", age, maxAge)
		}
	}
}

// waitSnowflake waits until s holds its own worker lease, which it takes
// in the background after it starts serving.
func (s *server) waitSnowflake(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/workerid")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds no worker lease 10s after it started", s.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
