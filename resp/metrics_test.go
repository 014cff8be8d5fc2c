package resp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/errs"
)

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
# HELP idalloc_resp_connections Connections open, at most resp_max_conns.
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

// gauge is the value of the one sample of the gauge or counter name.
func gauge(t *testing.T, in *instance, name string) float64 {
	t.Helper()
	mfs, err := in.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no single sample of %s", name)
	return 0
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

// TestKindClass: every kind of the vocabulary (errs.Kinds) has its class,
// and the message is the error's own; an unknown kind, a fault or the
// internal kind is an internal error.
func TestKindClass(t *testing.T) {
	want := map[errs.Kind]string{
		errs.BadRequest: "ERR", errs.UnknownTag: "ERR", errs.UnknownRoute: "ERR",
		errs.Exists: "ERR", errs.Exhausted: "ERR", errs.MethodNotAllowed: "ERR",
		errs.TokenMismatch: "ERR", errs.LeaseExpired: "ERR", errs.NotAssigned: "ERR",
		errs.Unavailable: "TRYAGAIN", errs.Draining: "TRYAGAIN", errs.ClockBackwards: "TRYAGAIN",
		errs.PeriodExhausted: "ERR", errs.NoWorkerID: "ERR",
		errs.Unauthorized: "NOAUTH", errs.Forbidden: "NOAUTH",
	}
	for _, kind := range errs.Kinds() {
		if kind == errs.Internal {
			continue
		}
		err := fmt.Errorf("fetch: %w", errs.E(kind, "f", "r", nil))
		class, ok := want[kind]
		if !ok {
			t.Errorf("kind %q has no class in this test", kind)
			continue
		}
		line, _, internal := classify(err)
		if msg := errs.E(kind, "f", "r", nil).Error(); internal || line != class+" "+msg {
			t.Errorf("%s: reply %q (internal %v), want %q", kind, line, internal, class+" "+msg)
		}
	}
	for _, err := range []error{errs.E("no_such_kind", "", "r", nil), errs.E(errs.Internal, "", "r", nil), fmt.Errorf("disk on fire")} {
		if line, out, internal := classify(err); !internal || line != "ERR internal error" || out != outInternal {
			t.Errorf("%v: reply %q, want ERR internal error", err, line)
		}
	}
}
