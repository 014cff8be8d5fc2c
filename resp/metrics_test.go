package resp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

func testutilGauge(m *Metrics) float64 { return testutil.ToFloat64(m.conns) }

// TestMetrics: commands are counted by name and outcome on the registry
// given, unknown names as "other", and open connections as a gauge.
func TestMetrics(t *testing.T) {
	in := start(t, options{noFlake: true, cfg: Config{AdminToken: token}})
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: in.addr, PoolSize: 1})
	defer rdb.Close()
	for range 3 {
		rdb.Get(ctx, "test_business")
	}
	rdb.Get(ctx, "nope")
	rdb.Do(ctx, "FROB", "x")
	rdb.Do(ctx, "NOTACMD")
	rdb.HSet(ctx, "t", "step", 1)
	rdb.Do(ctx, "SNOWFLAKE")

	want := `
# HELP idalloc_resp_connections Redis-protocol connections open.
# TYPE idalloc_resp_connections gauge
idalloc_resp_connections 1
`
	if err := testutil.GatherAndCompare(in.reg, strings.NewReader(want), "idalloc_resp_connections"); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		command, outcome string
		want             float64
	}{
		{"get", "ok", 3},
		{"get", "err", 1},
		{"other", "err", 2},
		{"hset", "noauth", 1},
		{"snowflake", "err", 1},
		{"info", "ok", 0},
	} {
		got, err := counterValue(in, c.command, c.outcome)
		if err != nil || got != c.want {
			t.Errorf("idalloc_resp_commands_total{command=%q,outcome=%q} = %v (%v), want %v", c.command, c.outcome, got, err, c.want)
		}
	}
}

func counterValue(in *instance, command, outcome string) (float64, error) {
	mfs, err := in.reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != "idalloc_resp_commands_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["command"] == command && labels["outcome"] == outcome {
				return m.GetCounter().GetValue(), nil
			}
		}
	}
	return 0, fmt.Errorf("no series")
}

// TestKindClass: every Kind of the three domain packages has its class, and
// the message is the domain's own; an unknown kind is an internal error.
func TestKindClass(t *testing.T) {
	tests := []struct {
		err       error
		wantClass string
	}{
		{&segment.Error{Kind: segment.KindInvalid, Field: "f", Reason: "r"}, "ERR"},
		{&segment.Error{Kind: segment.KindNotFound, Reason: "r"}, "ERR"},
		{&segment.Error{Kind: segment.KindExists, Reason: "r"}, "ERR"},
		{&segment.Error{Kind: segment.KindExhausted, Reason: "r"}, "ERR"},
		{&segment.Error{Kind: segment.KindUnavailable, Reason: "r"}, "TRYAGAIN"},
		{&workerlease.Error{Kind: workerlease.KindInvalid, Field: "f", Reason: "r"}, "ERR"},
		{&workerlease.Error{Kind: workerlease.KindNoWorkerID, Reason: "r"}, "TRYAGAIN"},
		{&workerlease.Error{Kind: workerlease.KindConflict, Reason: "r"}, "ERR"},
		{&workerlease.Error{Kind: workerlease.KindUnavailable, Reason: "r"}, "TRYAGAIN"},
		{&snowflake.Error{Kind: snowflake.KindInvalid, Field: "f", Reason: "r"}, "ERR"},
		{&snowflake.Error{Kind: snowflake.KindClockBackwards, Reason: "r"}, "TRYAGAIN"},
		{&snowflake.Error{Kind: snowflake.KindUnavailable, Reason: "r"}, "TRYAGAIN"},
		{fmt.Errorf("fetch: %w", segment.ErrUnavailable), "TRYAGAIN"},
	}
	for _, tt := range tests {
		_, msg, _ := describe(tt.err)
		line, _, internal := classify(tt.err)
		if internal || line != tt.wantClass+" "+msg {
			t.Errorf("%T %v: reply %q (internal %v), want %q", tt.err, tt.err, line, internal, tt.wantClass+" "+msg)
		}
	}
	for _, err := range []error{&segment.Error{Kind: "no_such_kind", Reason: "r"}, fmt.Errorf("disk on fire")} {
		if line, out, internal := classify(err); !internal || line != "ERR internal error" || out != outInternal {
			t.Errorf("%v: reply %q, want ERR internal error", err, line)
		}
	}
}
