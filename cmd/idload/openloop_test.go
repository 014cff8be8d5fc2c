package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunOpenLoop(t *testing.T) {
	var n atomic.Int64
	srv := fakeIDServer(t, func() int64 { return n.Add(1) })
	for _, client := range []string{"http", "raw"} {
		t.Run(client, func(t *testing.T) {
			cfg := config{URLs: []string{srv.URL}, Mode: modeSegment, Tag: "t", Clients: 4, Duration: 500 * time.Millisecond,
				Rate: 400, Timeout: time.Second, Client: client, KeepIDs: true, MaxIDs: 1 << 20}
			rep, err := run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The schedule allows 400/s × 0.5 s, plus each client's first
			// send; a trivial server keeps up, so well over half of it is sent.
			if !rep.Pass || rep.Rate != 400 || rep.OK > 200+4 || rep.OK < 100 {
				t.Fatalf("pass %v, rate %v, ok %d (want 100 to 204); examples %v", rep.Pass, rep.Rate, rep.OK, rep.Examples)
			}
		})
	}
}

func TestRunOpenLoopStopsWhileWaiting(t *testing.T) {
	var n atomic.Int64
	srv := fakeIDServer(t, func() int64 { return n.Add(1) })
	// One request a minute: the client sleeps through the whole run, and a
	// cancel must wake it rather than wait out its interval.
	cfg := config{URLs: []string{srv.URL}, Mode: modeSegment, Tag: "t", Clients: 1, Duration: time.Hour,
		Rate: 1.0 / 60, Timeout: time.Second, Client: "raw"}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, cfg)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop after its context was canceled")
	}
}
