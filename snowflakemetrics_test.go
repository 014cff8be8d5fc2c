package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/resp"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestSnowflakeCountedWhicheverFrontEnd wires the metrics as main does, as
// the snowflake generators' Observer, and serves snowflake IDs over HTTP
// and RESP from the one source: /metrics and /status count the IDs of both
// protocols, though neither front end counts them.
func TestSnowflakeCountedWhicheverFrontEnd(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite().Open(t)
	cfg, err := config.Default().Validate()
	if err != nil {
		t.Fatal(err)
	}
	w := wire(t, st, cfg, prometheus.NewRegistry())
	srv, source := w.srv, w.source
	log := slog.New(slog.DiscardHandler)
	respSrv, err := resp.New(resp.Config{Logger: log}, resp.Deps{Segments: w.alloc, Snowflake: source})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- respSrv.Serve(sctx, ln, 0) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("resp Serve: %v", err)
		}
	})

	for _, target := range []string{"/snowflake", "/snowflake?count=2"} {
		if rec := serveGet(srv, target); rec.Code != 200 {
			t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer rdb.Close()
	if err := rdb.Do(ctx, "SNOWFLAKE").Err(); err != nil {
		t.Fatalf("SNOWFLAKE: %v", err)
	}
	if err := rdb.Do(ctx, "SNOWFLAKE", 5).Err(); err != nil {
		t.Fatalf("SNOWFLAKE 5: %v", err)
	}

	// 1 + 2 over HTTP, 1 + 5 over RESP.
	scrape := serveGet(srv, "/metrics").Body.String()
	if want := `idalloc_ids_issued_total{app_tag="",mode="snowflake"} 9` + "\n"; !strings.Contains(scrape, want) {
		t.Errorf("scrape lacks %s", want)
	}
	for _, outcome := range []string{"waited", "try_later", "too_large"} {
		line := `idalloc_snowflake_clock_drift_events_total{outcome="` + outcome + `"} `
		if !strings.Contains(scrape, line) {
			t.Errorf("scrape lacks %s", line)
		}
	}
	status := serveGet(srv, "/status").Body.String()
	if want := `"snowflake":{"enabled":true,"issued":"9"`; !strings.Contains(status, want) {
		t.Errorf("/status lacks %s:\n%s", want, status)
	}
}
