package redislease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// TestRaceOwnClients races 16 processes, each with a client of its own, for
// the 8 worker IDs 0..7: first while every ID is new, then once all are
// released, then once all have expired.
func TestRaceOwnClients(t *testing.T) {
	const callers, maxWorkerID = 16, 7
	r := newRig(t)
	stores := make([]*Store, callers)
	for i := range stores {
		stores[i] = r.another(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, round := range []string{"new", "released", "expired"} {
		type result struct {
			lease workerlease.Lease
			err   error
		}
		results := make(chan result, callers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, st := range stores {
			wg.Go(func() {
				req := request("race", fmt.Sprintf("%s-%02d", round, i), maxWorkerID)
				req.TTL = time.Minute
				<-start
				l, err := st.Acquire(ctx, req)
				results <- result{l, err}
			})
		}
		close(start)
		wg.Wait()
		close(results)

		holders := map[int64]string{}
		none := 0
		for res := range results {
			switch {
			case errors.Is(res.err, workerlease.ErrNoWorkerID):
				none++
			case res.err != nil:
				t.Errorf("%s: Acquire: %v", round, res.err)
			case holders[res.lease.WorkerID] != "":
				t.Errorf("%s: worker ID %d granted to %q and %q", round, res.lease.WorkerID, holders[res.lease.WorkerID], res.lease.Token)
			case res.lease.WorkerID < 0 || res.lease.WorkerID > maxWorkerID:
				t.Errorf("%s: worker ID %d outside [0, %d]", round, res.lease.WorkerID, maxWorkerID)
			default:
				holders[res.lease.WorkerID] = res.lease.Token
			}
		}
		if len(holders) != maxWorkerID+1 || none != callers-(maxWorkerID+1) {
			t.Errorf("%s: %d grants and %d ErrNoWorkerID, want %d and %d",
				round, len(holders), none, maxWorkerID+1, callers-(maxWorkerID+1))
		}
		for id, token := range holders {
			switch round {
			case "new":
				if err := r.Release(ctx, "race", id, token, 0); err != nil {
					t.Errorf("Release(worker %d, token %q): %v", id, token, err)
				}
			case "released":
				r.expire(t, "race", id)
			}
		}
	}
}

// TestUnreachable: a Redis that does not answer is a fault, never one of
// the refusals, so that workerlease.Service reports ErrUnavailable.
func TestUnreachable(t *testing.T) {
	addr := closedAddr(t)
	// No resends, so that each call fails within a second; the
	// conformance suite covers go-redis's defaults.
	opened, err := Open("redis://"+addr+"/0?max_retries=-1", Options{})
	if err != nil {
		t.Fatalf("Open with the server down: %v", err)
	}
	t.Cleanup(func() { _ = opened.Close() })
	c := redis.NewClient(&redis.Options{Addr: addr, DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for name, st := range map[string]*Store{"Open": opened, "New": New(c, Options{})} {
		for _, call := range []struct {
			name string
			do   func() error
		}{
			{"Acquire", func() error { _, err := st.Acquire(ctx, request("c", "token-a", 7)); return err }},
			{"Renew", func() error { _, err := st.Renew(ctx, "c", 0, "token-a", time.Minute, 0); return err }},
			{"Release", func() error { return st.Release(ctx, "c", 0, "token-a", 0) }},
			{"CheckLayout", func() error { return st.CheckLayout(ctx, "c", 0, 10) }},
		} {
			err := call.do()
			if err == nil {
				t.Fatalf("%s: %s on a closed port: no error", name, call.name)
			}
			if e, ok := errs.Describe(err); ok {
				t.Errorf("%s: %s error %v is a refusal of kind %q, want a plain fault", name, call.name, err, e.Kind)
			}
			if errors.Is(err, snowflake.ErrLayoutMismatch) || errors.Is(err, workerlease.ErrInvalidConfig) {
				t.Errorf("%s: %s error %v matches a sentinel, want a plain fault", name, call.name, err)
			}
		}
		svc, _ := workerlease.NewService(st, workerlease.Config{})
		if _, err := svc.Acquire(ctx, "", ""); !errors.Is(err, workerlease.ErrUnavailable) {
			t.Errorf("%s: Service.Acquire error = %v, want %v", name, err, workerlease.ErrUnavailable)
		}
	}
}

func TestOpen(t *testing.T) {
	closed := closedAddr(t)
	for _, tc := range []struct {
		dsn string
		ok  bool
	}{
		{"redis://" + closed + "/0", true},
		{"redis://:secret@" + closed + "/3?dial_timeout=1s&max_retries=1", true},
		{"rediss://" + closed, true},
		{"unix:///nonexistent/redis.sock?db=2", true},
		{"redis+cluster://" + closed + "?addr=" + closed, true},
		{"", false},
		{closed, false},
		{"http://" + closed, false},
		{"redis://" + closed + "/db", false},
		{"redis://:secret@" + closed + "/0?bogus=1", false},
		{"redis://:secret%zz@" + closed + "/0", false},
		{"redis+cluster://:secret@" + closed + "?bogus=1", false},
	} {
		st, err := Open(tc.dsn, Options{})
		switch {
		case tc.ok && err != nil:
			t.Errorf("Open(%q): %v", tc.dsn, err)
		case !tc.ok && err == nil:
			t.Errorf("Open(%q): no error", tc.dsn)
		case !tc.ok && (!errors.Is(err, workerlease.ErrInvalidConfig) || strings.Contains(err.Error(), "secret")):
			t.Errorf("Open(%q) error = %q, want one wrapping %v without the password", tc.dsn, err, workerlease.ErrInvalidConfig)
		}
		if st != nil {
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		}
	}
	if _, err := Open("redis://"+closed, Options{Prefix: "x{y}:"}); !errors.Is(err, workerlease.ErrInvalidConfig) {
		t.Errorf("Open with a braced prefix: error = %v, want %v", err, workerlease.ErrInvalidConfig)
	}
}

func TestNewLeavesClientOpen(t *testing.T) {
	r := newRig(t)
	c := newTestClient(t)
	st := New(c, Options{Prefix: r.prefix})
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Errorf("client after the Store's Close: %v", err)
	}
	braced := New(c, Options{Prefix: "x{y}:"})
	if _, err := braced.Acquire(t.Context(), request("c", "token-a", 7)); !errors.Is(err, workerlease.ErrInvalidConfig) {
		t.Errorf("Acquire with a braced prefix: error = %v, want %v", err, workerlease.ErrInvalidConfig)
	}
}

// TestOpenWorksEndToEnd drives a Store from Open through
// workerlease.Service, as a library user would.
func TestOpenWorksEndToEnd(t *testing.T) {
	newTestClient(t) // skips when Redis is down
	st, err := Open("redis://"+redisAddr()+"/0", Options{Prefix: freshPrefix(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc, err := workerlease.NewService(st, workerlease.Config{Cluster: "e2e", MaxWorkerID: 3, TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	l, err := svc.Acquire(t.Context(), "", "end to end")
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := svc.Renew(t.Context(), "", l.WorkerID, l.Token, time.Now().UnixMilli()); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if err := svc.Release(t.Context(), "", l.WorkerID, l.Token, 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := svc.Renew(t.Context(), "", l.WorkerID, l.Token, 0); !errors.Is(err, workerlease.ErrNotAssigned) {
		t.Errorf("Renew after Release: error = %v, want %v", err, workerlease.ErrNotAssigned)
	}
}
