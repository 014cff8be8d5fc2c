package redislease

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

func TestAcquireNewIDExpiresByRedisClock(t *testing.T) {
	r := newRig(t)
	const ttl = 10 * time.Minute
	req := request("c", "token-a", 1023)
	req.TTL = ttl
	before := r.redisNowMS(t)
	got := mustAcquire(t, r, req)
	after := r.redisNowMS(t)

	exp := got.ExpiresAt
	got.ExpiresAt = time.Time{}
	want := workerlease.Lease{Cluster: "c", WorkerID: 0, Token: "token-a", Holder: "redislease test", NoHistory: true}
	if got != want {
		t.Errorf("Acquire = %+v, want %+v", got, want)
	}
	if exp.Location() != time.UTC || exp.UnixMilli() < before+ttl.Milliseconds() || exp.UnixMilli() > after+ttl.Milliseconds() {
		t.Errorf("ExpiresAt = %v (%d ms), want UTC between Redis's TIME %d and %d + %v",
			exp, exp.UnixMilli(), before, after, ttl)
	}
	if got := mustAcquire(t, r, request("c", "token-b", 1023)).WorkerID; got != 1 {
		t.Errorf("second Acquire: worker ID %d, want 1", got)
	}
}

// expire moves the stored expiry of workerID in cluster to Redis's now
// minus 1ms: expired by Redis's clock without waiting.
func (r *rig) expire(t *testing.T, cluster string, workerID int64) {
	t.Helper()
	r.setExpiry(t, cluster, workerID, r.redisNowMS(t)-1)
}

func (r *rig) setExpiry(t *testing.T, cluster string, workerID int64, ms int64) {
	t.Helper()
	if err := r.raw.HSet(t.Context(), r.leaseKey(cluster), fmt.Sprintf("%d:e", workerID), ms).Err(); err != nil {
		t.Fatalf("set expiry: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup leaves the worker ID and token to renew and release
		setup func(t *testing.T, r *rig) (workerID int64, token string)
		want  error
	}{
		{"never assigned", func(t *testing.T, r *rig) (int64, string) {
			mustAcquire(t, r, request("c", "token-a", 7))
			return 5, "token-a"
		}, workerlease.ErrNotAssigned},
		{"other cluster", func(t *testing.T, r *rig) (int64, string) {
			l := mustAcquire(t, r, request("other", "token-a", 7))
			return l.WorkerID, l.Token
		}, workerlease.ErrNotAssigned},
		{"negative worker ID", func(t *testing.T, r *rig) (int64, string) {
			mustAcquire(t, r, request("c", "token-a", 7))
			return -1, "token-a"
		}, workerlease.ErrNotAssigned},
		{"released", func(t *testing.T, r *rig) (int64, string) {
			l := mustAcquire(t, r, request("c", "token-a", 7))
			if err := r.Release(t.Context(), "c", l.WorkerID, l.Token, 0); err != nil {
				t.Fatalf("Release: %v", err)
			}
			return l.WorkerID, l.Token
		}, workerlease.ErrNotAssigned},
		{"released, another token", func(t *testing.T, r *rig) (int64, string) {
			l := mustAcquire(t, r, request("c", "token-a", 7))
			if err := r.Release(t.Context(), "c", l.WorkerID, l.Token, 0); err != nil {
				t.Fatalf("Release: %v", err)
			}
			return l.WorkerID, "token-b"
		}, workerlease.ErrNotAssigned},
		{"held by another token", func(t *testing.T, r *rig) (int64, string) {
			l := mustAcquire(t, r, request("c", "token-a", 7))
			return l.WorkerID, "token-b"
		}, workerlease.ErrTokenMismatch},
		{"token differing in case", func(t *testing.T, r *rig) (int64, string) {
			l := mustAcquire(t, r, request("c", "token-a", 7))
			return l.WorkerID, "TOKEN-A"
		}, workerlease.ErrTokenMismatch},
		{"expired, not taken over", func(t *testing.T, r *rig) (int64, string) {
			l := mustAcquire(t, r, request("c", "token-a", 7))
			r.expire(t, "c", l.WorkerID)
			return l.WorkerID, l.Token
		}, workerlease.ErrLeaseExpired},
		{"expired and taken over", func(t *testing.T, r *rig) (int64, string) {
			l := mustAcquire(t, r, request("c", "token-a", 0))
			r.expire(t, "c", l.WorkerID)
			mustAcquire(t, r, request("c", "token-b", 0))
			return l.WorkerID, l.Token
		}, workerlease.ErrTokenMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			id, token := tc.setup(t, r)
			if _, err := r.Renew(t.Context(), "c", id, token, time.Minute, 0); !errors.Is(err, tc.want) {
				t.Errorf("Renew error = %v, want %v", err, tc.want)
			}
			if err := r.Release(t.Context(), "c", id, token, 0); !errors.Is(err, tc.want) {
				t.Errorf("Release error = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestLastTimestampNeverLowered walks one worker ID through renewals,
// refusals and a takeover; last_timestamp_ms only ever rises. The values
// beyond 2^53 would compare equal as Lua numbers (doubles).
func TestLastTimestampNeverLowered(t *testing.T) {
	const big = int64(1) << 60
	r := newRig(t)
	l := mustAcquire(t, r, request("c", "token-a", 0))
	renew := func(report int64) (int64, error) {
		got, err := r.Renew(t.Context(), "c", l.WorkerID, l.Token, time.Minute, report)
		return got.LastTimestampMS, err
	}
	stored := func() int64 {
		s, err := r.raw.HGet(t.Context(), r.leaseKey("c"), "0:l").Result()
		if err != nil {
			t.Fatalf("read last_timestamp_ms: %v", err)
		}
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	for _, step := range []struct {
		name    string
		do      func() (int64, error) // returns the Lease's value, 0 when refused
		wantErr error
		want    int64 // stored afterwards
	}{
		{"renew 100", func() (int64, error) { return renew(100) }, nil, 100},
		{"renew 50", func() (int64, error) { return renew(50) }, nil, 100},
		{"renew 0 reports nothing", func() (int64, error) { return renew(0) }, nil, 100},
		{"renew negative", func() (int64, error) { return renew(-5) }, nil, 100},
		{"renew 9999 (one digit more)", func() (int64, error) { return renew(9999) }, nil, 9999},
		{"renew 2^60+1", func() (int64, error) { return renew(big + 1) }, nil, big + 1},
		{"renew 2^60", func() (int64, error) { return renew(big) }, nil, big + 1},
		{"expired renew raises", func() (int64, error) {
			r.expire(t, "c", 0)
			return renew(big + 7)
		}, workerlease.ErrLeaseExpired, big + 7},
		{"expired renew does not lower", func() (int64, error) { return renew(big + 2) }, workerlease.ErrLeaseExpired, big + 7},
		{"expired release raises", func() (int64, error) {
			return 0, r.Release(t.Context(), "c", 0, l.Token, big+9)
		}, workerlease.ErrLeaseExpired, big + 9},
		{"takeover inherits it", func() (int64, error) {
			l = mustAcquire(t, r, request("c", "token-b", 0))
			return l.LastTimestampMS, nil
		}, nil, big + 9},
		{"old token refused, nothing recorded", func() (int64, error) {
			_, err := r.Renew(t.Context(), "c", 0, "token-a", time.Minute, big+50)
			return 0, err
		}, workerlease.ErrTokenMismatch, big + 9},
		{"release lower keeps it", func() (int64, error) {
			return 0, r.Release(t.Context(), "c", 0, l.Token, 5)
		}, nil, big + 9},
	} {
		got, err := step.do()
		if !errors.Is(err, step.wantErr) {
			t.Fatalf("%s: error = %v, want %v", step.name, err, step.wantErr)
		}
		if err == nil && got != 0 && got != step.want {
			t.Errorf("%s: Lease.LastTimestampMS = %d, want %d", step.name, got, step.want)
		}
		if s := stored(); s != step.want {
			t.Errorf("%s: stored last_timestamp_ms = %d, want %d", step.name, s, step.want)
		}
	}
}

// TestExpiryIgnoresCallerClock: the caller's clock (NowMS) only orders the
// preference among free IDs; whether an ID is free is Redis's call.
func TestExpiryIgnoresCallerClock(t *testing.T) {
	for _, skew := range []time.Duration{-10 * time.Hour, 10 * time.Hour} {
		t.Run(fmt.Sprint("caller clock ", skew), func(t *testing.T) {
			r := newRig(t)
			const ttl = 400 * time.Millisecond
			req := request("c", "token-a", 0)
			req.TTL = ttl
			req.NowMS = time.Now().Add(skew).UnixMilli()
			redisNow := r.redisNowMS(t)
			l := mustAcquire(t, r, req)
			if d := l.ExpiresAt.UnixMilli() - (redisNow + ttl.Milliseconds()); d < 0 || d > 1000 {
				t.Errorf("ExpiresAt is %d ms off Redis's TIME + TTL", d)
			}
			// Held by Redis's clock, whatever the callers' clocks say.
			req.Token = "token-b"
			if _, err := r.Acquire(t.Context(), req); !errors.Is(err, workerlease.ErrNoWorkerID) {
				t.Fatalf("Acquire while held: error = %v, want %v", err, workerlease.ErrNoWorkerID)
			}
			if _, err := r.Renew(t.Context(), "c", 0, "token-a", ttl, req.NowMS); err != nil {
				t.Fatalf("Renew while held: %v", err)
			}
			time.Sleep(ttl + 200*time.Millisecond)
			if _, err := r.Renew(t.Context(), "c", 0, "token-a", ttl, 0); !errors.Is(err, workerlease.ErrLeaseExpired) {
				t.Errorf("Renew after TTL: error = %v, want %v", err, workerlease.ErrLeaseExpired)
			}
			if got := mustAcquire(t, r, req); got.WorkerID != 0 {
				t.Errorf("Acquire after TTL: worker ID %d, want 0", got.WorkerID)
			}
		})
	}
	t.Run("stored expiry against TIME", func(t *testing.T) {
		r := newRig(t)
		l := mustAcquire(t, r, request("c", "token-a", 0))
		r.setExpiry(t, "c", 0, r.redisNowMS(t)+time.Hour.Milliseconds())
		if _, err := r.Renew(t.Context(), "c", 0, l.Token, time.Minute, 0); err != nil {
			t.Errorf("Renew with an hour left by Redis's clock: %v", err)
		}
		r.setExpiry(t, "c", 0, r.redisNowMS(t)-1)
		if _, err := r.Renew(t.Context(), "c", 0, l.Token, time.Minute, 0); !errors.Is(err, workerlease.ErrLeaseExpired) {
			t.Errorf("Renew 1ms past expiry by Redis's clock: error = %v, want %v", err, workerlease.ErrLeaseExpired)
		}
	})
}

// TestAcquirePreference: IDs 0 and 1 are released with last_timestamp_ms
// ahead of and behind the caller's clock; ID 2 was never leased.
func TestAcquirePreference(t *testing.T) {
	const nowMS = 1_000_000
	r := newRig(t)
	var held []workerlease.Lease
	for i := range 2 {
		held = append(held, mustAcquire(t, r, request("c", fmt.Sprint("setup-", i), 1)))
	}
	for i, ts := range []int64{nowMS + 60_000, nowMS - 60_000} {
		if err := r.Release(t.Context(), "c", held[i].WorkerID, held[i].Token, ts); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	for i, want := range []struct{ workerID, lastTimestampMS int64 }{
		{1, nowMS - 60_000}, // behind the clock, though 0 is lower
		{2, 0},              // never leased beats ahead of the clock
		{0, nowMS + 60_000}, // the last one left
	} {
		req := request("c", fmt.Sprint("token-", i), 2)
		req.NowMS = nowMS
		got := mustAcquire(t, r, req)
		if got.WorkerID != want.workerID || got.LastTimestampMS != want.lastTimestampMS {
			t.Errorf("Acquire %d = worker %d with last_timestamp_ms %d, want worker %d with %d",
				i, got.WorkerID, got.LastTimestampMS, want.workerID, want.lastTimestampMS)
		}
	}
	if _, err := r.Acquire(t.Context(), request("c", "token-x", 2)); !errors.Is(err, workerlease.ErrNoWorkerID) {
		t.Errorf("Acquire with all held: error = %v, want %v", err, workerlease.ErrNoWorkerID)
	}
	// A larger MaxWorkerID sees the space above; rows above a smaller one
	// are left alone.
	if got := mustAcquire(t, r, request("c", "token-y", 5)).WorkerID; got != 3 {
		t.Errorf("Acquire with MaxWorkerID 5: worker %d, want 3", got)
	}
}

// TestInvalidInput: what Redis adds to the Service's input checks (which
// the suite holds every store's Service to): its own key layout refuses a
// cluster that would break its hash tag from any caller, and refused calls
// write nothing.
func TestInvalidInput(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name string
		edit func(*workerlease.AcquireRequest)
		want error
	}{
		{"empty cluster", func(q *workerlease.AcquireRequest) { q.Cluster = "" }, workerlease.ErrInvalidCluster},
		{"cluster with {", func(q *workerlease.AcquireRequest) { q.Cluster = "a{b" }, workerlease.ErrInvalidCluster},
		{"cluster with }", func(q *workerlease.AcquireRequest) { q.Cluster = "}a" }, workerlease.ErrInvalidCluster},
	} {
		req := request("c", "token-a", 7)
		tc.edit(&req)
		if _, err := r.Acquire(t.Context(), req); !errors.Is(err, tc.want) {
			t.Errorf("%s: Acquire error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if keys := keysUnder(t.Context(), t, r.raw, r.prefix); len(keys) != 0 {
		t.Errorf("refused Acquires wrote keys %q", keys)
	}
	if err := r.CheckLayout(t.Context(), "", 0, 10); !errors.Is(err, workerlease.ErrInvalidCluster) {
		t.Errorf("CheckLayout with empty cluster: error = %v, want %v", err, workerlease.ErrInvalidCluster)
	}
}

func TestCheckLayout(t *testing.T) {
	r := newRig(t)
	const epoch = int64(1_767_225_600_000) // 2026-01-01
	for _, c := range []struct {
		cluster string
		epochMS int64
		bits    int
		want    error
	}{
		{"layout-a", epoch, 10, nil},
		{"layout-a", epoch, 10, nil},
		{"layout-a", epoch, 8, snowflake.ErrLayoutMismatch},
		{"layout-a", epoch + 86_400_000, 10, snowflake.ErrLayoutMismatch},
		{"layout-a", epoch, 10, nil}, // the refusals changed nothing
		{"layout-b", epoch, 8, nil},  // clusters are independent
		{"layout-b", epoch, 8, nil},
		{"layout-b", epoch, 10, snowflake.ErrLayoutMismatch},
	} {
		if err := r.CheckLayout(t.Context(), c.cluster, c.epochMS, c.bits); !errors.Is(err, c.want) {
			t.Errorf("CheckLayout(%s, %d, %d) = %v, want %v", c.cluster, c.epochMS, c.bits, err, c.want)
		}
	}
	if err := r.another(t).CheckLayout(t.Context(), "layout-a", epoch, 12); !errors.Is(err, snowflake.ErrLayoutMismatch) {
		t.Errorf("CheckLayout from a second client = %v, want %v", err, snowflake.ErrLayoutMismatch)
	}
}

// TestAcquireWithoutLastTimestamp: a worker ID whose last timestamp field
// is lost (the other fields kept) is granted with no history: the
// reservation of its last holder, who may still issue, is gone with it.
func TestAcquireWithoutLastTimestamp(t *testing.T) {
	r := newRig(t)
	a := mustAcquire(t, r, request("c", "token-a", 0))
	if _, err := r.Renew(t.Context(), "c", a.WorkerID, a.Token, time.Minute, time.Now().UnixMilli()); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if err := r.Release(t.Context(), "c", a.WorkerID, a.Token, 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := r.raw.HDel(t.Context(), r.leaseKey("c"), "0:l").Err(); err != nil {
		t.Fatalf("HDEL: %v", err)
	}
	if got := mustAcquire(t, r, request("c", "token-b", 0)); got.WorkerID != 0 || !got.NoHistory || got.LastTimestampMS != 0 {
		t.Errorf("grant after the last timestamp was lost = worker %d, NoHistory %v, last_timestamp_ms %d; want worker 0, true, 0",
			got.WorkerID, got.NoHistory, got.LastTimestampMS)
	}
}
