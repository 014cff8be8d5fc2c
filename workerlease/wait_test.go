package workerlease

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/errs"
)

// TestKeeperWait follows a keeper from before its start to an open fence
// and through a loss: at every moment before a lease's fence is open it
// says why and for about how long (docs/api.md §2, Health), and only a look at
// the leases that found every worker ID held says the cluster is full.
func TestKeeperWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const skew = time.Second
		mem := NewMemoryStore(nil)
		mem.Forget() // the grant that succeeds has no history
		gate := make(chan struct{})
		var attempts int
		var refuse atomic.Bool
		fs := &faultStore{Store: mem}
		fs.AcquireFunc = func(ctx context.Context, req AcquireRequest) (Lease, error) {
			switch attempts++; attempts {
			case 1: // held until the gate opens, then the store is down
				select {
				case <-gate:
				case <-ctx.Done():
					return Lease{}, ctx.Err()
				}
				return Lease{}, errors.New("connection refused")
			case 2:
				return Lease{}, ErrNoWorkerID
			}
			return mem.Acquire(ctx, req)
		}
		fs.RenewFunc = func(ctx context.Context, cluster string, id int64, token string, ttl time.Duration, last int64) (Lease, error) {
			if refuse.Load() {
				return Lease{}, ErrNotAssigned
			}
			return mem.Renew(ctx, cluster, id, token, ttl, last)
		}
		k := mustKeeper(t, fs, Config{TTL: testTTL}, KeeperConfig{ClockSkew: skew, randN: jitterDraws[0].randN})
		check := func(step string, want Wait) {
			t.Helper()
			synctest.Wait()
			if got := k.Wait(time.Now()); got != want {
				t.Errorf("%s: Wait() = %+v, want %+v", step, got, want)
			}
		}
		check("before Start", Wait{Reason: WaitAcquiring, For: time.Second})
		k.Start(t.Context())
		check("first attempt under way", Wait{Reason: WaitAcquiring, For: time.Second})
		close(gate)
		// Backoff from RetryInterval (1s), the lowest draw: half of it.
		check("after a failed attempt", Wait{Reason: WaitRetrying, For: 500 * time.Millisecond})
		time.Sleep(200 * time.Millisecond)
		check("later", Wait{Reason: WaitRetrying, For: 300 * time.Millisecond})
		time.Sleep(300 * time.Millisecond)
		check("every worker ID held", Wait{Reason: WaitNoFree, For: time.Second})
		if err := k.Wait(time.Now()).Err(); !errors.Is(err, ErrNoWorkerID) {
			t.Errorf("Err() with every worker ID held = %v, want %v", err, ErrNoWorkerID)
		}
		time.Sleep(time.Second)
		check("a grant with no history", Wait{Reason: WaitNoHistory, For: testTTL + skew})
		err := k.Wait(time.Now()).Err()
		var we *WaitError
		if !errors.As(err, &we) || !errors.Is(err, ErrWaiting) || errs.KindOf(err) != errs.Unavailable ||
			we.RetryAfterSeconds() != 31 || !strings.Contains(err.Error(), WaitNoHistory+"; retry in about 31.0 s") {
			t.Errorf("Err() during the wait = %v, want a WaitError of kind unavailable saying why and 31 s", err)
		}
		time.Sleep(testTTL + skew)
		check("the fence open", Wait{})
		if err := k.Wait(time.Now()).Err(); err != nil {
			t.Errorf("Err() with the fence open = %v, want nil", err)
		}

		// The store refuses the next renewals: the lease is lost, and the
		// keeper says so until it holds another whose fence is open.
		refuse.Store(true)
		lost := k.Session().Done()
		for !isClosed(lost) {
			time.Sleep(time.Second)
		}
		synctest.Wait()
		if w := k.Wait(time.Now()); w.Reason == "" || w.Reason == WaitNoFree || w.For <= 0 {
			t.Errorf("Wait() after the loss = %+v, want a reason and a wait, not a full cluster", w)
		}
		refuse.Store(false)
		time.Sleep(testTTL + skew + 2*time.Second)
		check("the next lease", Wait{})
		closeKeeper(t, k, 0)
	})
}

// TestWaitErr: the refusal each Wait makes.
func TestWaitErr(t *testing.T) {
	for _, tt := range []struct {
		name       string
		w          Wait
		want       error
		retryAfter int64
	}{
		{"open", Wait{}, nil, 0},
		{"full", Wait{Reason: WaitNoFree, For: time.Second}, ErrNoWorkerID, 0},
		{"starting", Wait{Reason: WaitAcquiring, For: time.Second}, ErrWaiting, 1},
		{"under a second", Wait{Reason: WaitRetrying, For: time.Millisecond}, ErrWaiting, 1},
		{"no history", Wait{Reason: WaitNoHistory, For: 3001 * time.Millisecond}, ErrWaiting, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.w.Err()
			if (err == nil) != (tt.want == nil) || !errors.Is(err, tt.want) {
				t.Fatalf("Err() = %v, want %v", err, tt.want)
			}
			if we, ok := errors.AsType[*WaitError](err); ok && we.RetryAfterSeconds() != tt.retryAfter {
				t.Errorf("RetryAfterSeconds() = %d, want %d", we.RetryAfterSeconds(), tt.retryAfter)
			}
		})
	}
}
