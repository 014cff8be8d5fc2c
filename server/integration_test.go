package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// The domain types satisfy the interfaces the server consumes.
var (
	_ Segments   = (*segment.Allocator)(nil)
	_ Snowflakes = (*leased.Source)(nil)
	_ Leases     = (*workerlease.Service)(nil)
	_ OwnLease   = (*workerlease.Keeper)(nil)
)

// realRig wires the server as main does, on a real (SQLite) store.
type realRig struct {
	*rig
	own *workerlease.Keeper
}

// newRealRig builds a realRig; edit, if any, adjusts the server's config.
func newRealRig(t *testing.T, edit ...func(*Config)) *realRig {
	t.Helper()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	obs := mustObserver(t, reg)
	store := storetest.SQLite().Open(t) // test_business seeded, step 100000
	alloc, err := segment.New(ctx, store, segment.Config{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })

	svc, err := workerlease.NewService(store, workerlease.Config{Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	src, err := leased.New(keeper, layout, snowflake.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	keeper.Start(ctx)
	t.Cleanup(func() { _ = keeper.Close(ctx, src.LastTimestampMS()) })

	cfg := Config{AdminToken: "s3cret-admin-token", Observer: obs, Metrics: mustMetrics(t, reg), Gatherer: reg}
	for _, e := range edit {
		e(&cfg)
	}
	deps := Deps{Segments: alloc, Store: store, Snowflake: src, Leases: svc, OwnLease: keeper}
	watch(t, obs, deps, metrics.Sources{})
	srv, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &realRig{rig: &rig{srv: srv, reg: reg}, own: keeper}
}

func TestRealSegments(t *testing.T) {
	rg := newRealRig(t)
	for want := 1; want <= 3; want++ {
		got := rg.do(t, "GET", "/alloc?app_tag=test_business", "")
		if got.body["id"] != float64(want) {
			t.Fatalf("id %d: got %s", want, got.raw)
		}
	}
	got := rg.do(t, "GET", "/alloc?app_tag=test_business&count=5", "")
	if want := `{"resp_code":0,"msg":"success","id":4,"ids":[4,5,6,7,8]}`; got.raw != want {
		t.Errorf("batch: got %s, want %s", got.raw, want)
	}
	if got := rg.do(t, "GET", "/alloc?app_tag=nope", ""); got.code() != 2.0 {
		t.Errorf("unknown tag: got %s, want resp_code 2", got.raw)
	}
	if got := rg.do(t, "POST", "/tags", `{"app_tag":"order","step":10,"start":100}`, adminAuth...); got.status != 201 {
		t.Fatalf("create: got %d %s", got.status, got.raw)
	}
	if got := rg.do(t, "GET", "/alloc?app_tag=order", ""); got.body["id"] != 100.0 {
		t.Errorf("first ID of a tag started at 100: got %s", got.raw)
	}
	if got := rg.do(t, "POST", "/tags", `{"app_tag":"order","step":10}`, adminAuth...); got.code() != 10.0 {
		t.Errorf("duplicate: got %s, want resp_code 10", got.raw)
	}
	if got := rg.do(t, "GET", "/health?app_tag=order", ""); got.code() != 0.0 || got.body["left"].(float64) < 9 {
		t.Errorf("left: got %s", got.raw)
	}
	got = rg.do(t, "GET", "/tags", "", adminAuth...)
	if tags, _ := got.body["tags"].([]any); len(tags) != 2 || tags[0].(map[string]any)["app_tag"] != "order" {
		t.Errorf("tags: got %s", got.raw)
	}
	scrape := rg.do(t, "GET", "/metrics", "", adminAuth...).raw
	for _, want := range []string{
		`idalloc_ids_issued_total{app_tag="test_business",mode="segment"} 8`,
		"\nidalloc_segment_fetches_total ",
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

func TestRealSnowflake(t *testing.T) {
	rg := newRealRig(t)
	var own workerlease.Lease
	eventually(t, "own lease", func() bool {
		var ok bool
		own, ok = rg.own.Lease()
		return ok
	})
	var got reply
	eventually(t, "a snowflake ID", func() bool {
		got = rg.do(t, "GET", "/snowflake", "")
		return got.status == 200
	})
	id := got.body["id_str"].(string)
	dec := rg.do(t, "GET", "/snowflake/"+id, "")
	if dec.body["worker_id"] != float64(own.WorkerID) {
		t.Errorf("decomposed %s, want worker_id %d", dec.raw, own.WorkerID)
	}
	mine := rg.do(t, "GET", "/workerid", "")
	if mine.body["worker_id"] != float64(own.WorkerID) || mine.body["max_worker_id"] != 1023.0 {
		t.Errorf("own lease: got %s", mine.raw)
	}

	acq := rg.do(t, "POST", "/workerid", `{"cluster":"default"}`, adminAuth...)
	if acq.status != 201 || acq.body["worker_id"] == float64(own.WorkerID) {
		t.Fatalf("acquire: got %d %s, want 201 and a worker ID other than ours (%d)", acq.status, acq.raw, own.WorkerID)
	}
	wid := strconv.FormatFloat(acq.body["worker_id"].(float64), 'f', 0, 64)
	tok := acq.body["token"].(string)
	hold := `{"worker_id":` + wid + `,"token":"` + tok + `"`
	if got := rg.do(t, "POST", "/workerid/renew", hold+`,"last_timestamp_ms":5}`, adminAuth...); got.status != 200 || got.body["expires_at"] == nil {
		t.Errorf("renew: got %d %s", got.status, got.raw)
	}
	if got := rg.do(t, "POST", "/workerid/renew", `{"worker_id":`+wid+`,"token":"`+goodToken+`"}`, adminAuth...); got.code() != 6.0 {
		t.Errorf("renew with another token: got %s, want resp_code 6", got.raw)
	}
	if got := rg.do(t, "POST", "/workerid/release", hold+`}`, adminAuth...); got.status != 200 {
		t.Errorf("release: got %d %s", got.status, got.raw)
	}
	if got := rg.do(t, "POST", "/workerid/renew", hold+`}`, adminAuth...); got.code() != 6.0 {
		t.Errorf("renew after release: got %s, want resp_code 6", got.raw)
	}
}
