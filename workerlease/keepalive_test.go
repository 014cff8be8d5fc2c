package workerlease

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestSessionRenewsEveryThirdOfTTL: renewals go every TTL/3 from the first,
// which NewSession sends at once, and each stores a reservation a TTL past
// its sending.
func TestSessionRenewsEveryThirdOfTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		mem := NewMemoryStore(nil)
		renewals := newCalls()
		fs := &faultStore{Store: mem}
		fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			renewals.add(last)
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{})
		time.Sleep(65 * time.Second)
		closeSession(t, s, 0)

		var wantAt []time.Duration
		var wantReserves []int64
		for d := time.Duration(0); d <= 60*time.Second; d += 10 * time.Second {
			wantAt = append(wantAt, d)
			wantReserves = append(wantReserves, start.Add(d+testTTL).UnixMilli())
		}
		if got := renewals.times(); !slices.Equal(got, wantAt) {
			t.Errorf("renewals at %v, want %v", got, wantAt)
		}
		if got := renewals.lasts(); !slices.Equal(got, wantReserves) {
			t.Errorf("reservations %v, want %v", got, wantReserves)
		}
		// The last renewal's reservation is in the store, for the next holder.
		if got, want := mustLease(t, mem, 0).lastTimestampMS, wantReserves[len(wantReserves)-1]; got != want {
			t.Errorf("stored last_timestamp_ms = %d, want %d", got, want)
		}
	})
}

// TestSessionRenewRetriesAreJittered: a failed renewal is retried after half
// to all of RetryInterval (1s), not after exactly 1s on every instance.
func TestSessionRenewRetriesAreJittered(t *testing.T) {
	want := map[string][]time.Duration{
		"lowest draw":  secs(0, 10, 10.5, 11, 11.5),
		"highest draw": secs(0, 10, 11, 12, 13),
	}
	for _, draw := range jitterDraws {
		t.Run(draw.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := NewMemoryStore(nil)
				renewals := newCalls()
				fs := &faultStore{Store: mem}
				fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
					if renewals.add(last) > 1 {
						return Lease{}, errors.New("connection refused")
					}
					return mem.Renew(ctx, c, id, tok, ttl, last)
				}
				s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{randN: draw.randN})
				time.Sleep(13500 * time.Millisecond)
				synctest.Wait()
				closeSession(t, s, 0)

				at := renewals.times()
				if got := at[:min(len(at), 5)]; !slices.Equal(got, want[draw.name]) {
					t.Errorf("renewals at %v, want %v first", at, want[draw.name])
				}
			})
		})
	}
}

// TestSessionLoss: a renewal refused ends the session at once; a store that
// fails or hangs ends it at the local deadline (27s: the last renewal sent
// at 0s, plus TTL, minus Margin), while the store still holds the lease.
// Either way Done closes once, Err says ErrLeaseLost, and nothing after the
// loss (GiveUp, Abandon, Close) changes that or reaches the store.
func TestSessionLoss(t *testing.T) {
	tests := []struct {
		name     string
		renew    func(ctx context.Context) error // every renewal after the first
		wantLoss time.Duration
		wantErr  error
	}{
		{"token mismatch", func(context.Context) error { return ErrTokenMismatch }, 10 * time.Second, ErrTokenMismatch},
		{"lease expired", func(context.Context) error { return ErrLeaseExpired }, 10 * time.Second, ErrLeaseExpired},
		{"not assigned", func(context.Context) error { return ErrNotAssigned }, 10 * time.Second, ErrNotAssigned},
		{"store unreachable", func(context.Context) error { return errors.New("connection refused") }, 27 * time.Second, nil},
		{"store hangs until the context ends", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, 27 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := NewMemoryStore(nil)
				renewals, releases := newCalls(), newCalls()
				fs := &faultStore{Store: mem}
				fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
					if renewals.add(last) > 1 {
						return Lease{}, tt.renew(ctx)
					}
					return mem.Renew(ctx, c, id, tok, ttl, last)
				}
				countReleases(fs, mem, releases)
				s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{})

				time.Sleep(tt.wantLoss - time.Nanosecond)
				synctest.Wait()
				if isClosed(s.Done()) || s.Err() != nil {
					t.Fatalf("session ended before %v: %v", tt.wantLoss, s.Err())
				}
				if !fenceNow(s) {
					t.Errorf("Fence() just before the loss = false, want true")
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if !isClosed(s.Done()) {
					t.Fatalf("Done() not closed at %v", tt.wantLoss)
				}
				err := s.Err()
				if !errors.Is(err, ErrLeaseLost) {
					t.Errorf("Err() = %v, want %v", err, ErrLeaseLost)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("Err() = %v, want it to wrap %v", err, tt.wantErr)
				}
				if fenceNow(s) {
					t.Errorf("Fence() after the loss = true, want false")
				}
				if _, ok := s.Renewed(); ok {
					t.Errorf("Renewed() after the loss: held, want not")
				}
				if row := mustLease(t, mem, 0); tt.wantLoss == 27*time.Second && !row.live(mem.now()) {
					t.Errorf("store expired the lease (at %v) before the holder's fence closed", row.expiresAt)
				}

				s.GiveUp()
				s.Abandon()
				if err := s.Close(context.Background(), time.Now().UnixMilli()); err != nil {
					t.Errorf("Close() after the loss = %v, want nil", err)
				}
				synctest.Wait()
				if got := s.Err(); got != err {
					t.Errorf("Err() after GiveUp, Abandon and Close = %v, want the loss %v", got, err)
				}
				if n := releases.count(); n != 0 {
					t.Errorf("releases after the loss = %d, want 0: the lease is not this holder's", n)
				}
				n := renewals.count()
				time.Sleep(testTTL)
				if got := renewals.count(); got != n {
					t.Errorf("renewals after the loss: %d more, want none", got-n)
				}
			})
		})
	}
}

// TestSessionRenewalAfterDeadline: a store that ignores the renewal's
// context (a hung connection whose request it processes later) cannot hold
// the session open: Done closes at the local deadline. When the renewal
// succeeds after it, the session stays ended (it does not come back) and
// gives the lease back with the reservation that renewal stored.
func TestSessionRenewalAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		mem := NewMemoryStore(nil)
		renewals, releases := newCalls(), newCalls()
		stall := make(chan struct{})
		fs := &faultStore{Store: mem}
		fs.RenewFunc = func(ctx context.Context, c string, id int64, tok string, ttl time.Duration, last int64) (Lease, error) {
			if renewals.add(last) == 2 {
				<-stall
				ctx = context.WithoutCancel(ctx)
			}
			return mem.Renew(ctx, c, id, tok, ttl, last)
		}
		countReleases(fs, mem, releases)
		s := mustSession(t, fs, Config{TTL: testTTL}, SessionConfig{})
		l := s.Lease()

		time.Sleep(27*time.Second - time.Nanosecond)
		if isClosed(s.Done()) || !fenceNow(s) {
			t.Errorf("session ended before the local deadline")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !isClosed(s.Done()) {
			t.Errorf("Done() not closed at the local deadline while a renewal hangs")
		}
		if err := s.Err(); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Err() = %v, want %v", err, ErrLeaseLost)
		}
		if fenceNow(s) {
			t.Errorf("Fence() at the local deadline = true, want false")
		}

		time.Sleep(time.Second)
		close(stall) // the renewal sent at 10s lands at 28s
		synctest.Wait()
		if fenceNow(s) {
			t.Errorf("Fence() after a renewal succeeded past the deadline = true, want false")
		}
		if !errors.Is(s.Err(), ErrLeaseLost) {
			t.Errorf("Err() = %v, want %v", s.Err(), ErrLeaseLost)
		}
		reserve := start.Add(10*time.Second + testTTL).UnixMilli()
		row := mustLease(t, mem, l.WorkerID)
		if !row.released {
			t.Errorf("lease renewed past the deadline not released")
		}
		if row.lastTimestampMS != reserve {
			t.Errorf("last_timestamp_ms = %d, want the late renewal's reservation %d", row.lastTimestampMS, reserve)
		}
		if got := renewals.count(); got != 2 {
			t.Errorf("renewals = %d, want 2", got)
		}
		closeSession(t, s, 0)
		if got := releases.count(); got != 1 {
			t.Errorf("releases = %d, want 1", got)
		}
	})
}
