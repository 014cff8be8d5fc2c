//go:build unix

package client

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

// TestKeeperFencesAFrozenServer: a Keeper whose only server is frozen
// (SIGSTOP) past the TTL stops its generator and closes Done before the
// lease can lapse; once the lease has lapsed, another client takes the
// worker ID over and issues only IDs above every ID of the first holder.
func TestKeeperFencesAFrozenServer(t *testing.T) {
	const ttl = 3 * time.Second
	srv := leaseServer(t, ttl, nil)
	ctx := t.Context()
	a := newTestClient(t, Config{URLs: []string{srv.URL}})
	ka, err := NewKeeper(ctx, KeeperConfig{Generator: a.Generator()})
	if err != nil {
		t.Fatal(err)
	}
	defer ka.Close(context.Background(), 0)
	genA, err := snowflake.New(ka.Settings(snowflake.Settings{WorkerBits: 2}))
	if err != nil {
		t.Fatal(err)
	}

	// A issues IDs until its fence stops it.
	type run struct {
		n      int
		maxID  int64
		lastOK time.Time
		err    error
	}
	ranA := make(chan run, 1)
	go func() {
		var r run
		for {
			id, err := genA.Next()
			if err != nil {
				r.err = err
				ranA <- r
				return
			}
			r.n++
			r.maxID, r.lastOK = max(r.maxID, id), time.Now()
			time.Sleep(100 * time.Microsecond)
		}
	}()
	time.Sleep(ttl) // a few renewals

	srv.signal(syscall.SIGSTOP)
	frozeAt := time.Now()
	defer srv.signal(syscall.SIGCONT)
	select {
	case <-ka.Done():
	case <-time.After(2 * ttl):
		t.Fatalf("Done not closed %v after the server froze (TTL %v)", 2*ttl, ttl)
	}
	doneAt := time.Now()
	// The lease as the server last renewed it: its expiry is by the
	// server's database clock, SQLite in the server process on this host.
	lapse := ka.Lease().ExpiresAt
	t.Logf("froze at +0, Done at +%v, lease could lapse at +%v", doneAt.Sub(frozeAt), lapse.Sub(frozeAt))
	if !doneAt.Before(lapse) {
		t.Errorf("Done closed at %v, not before the lease could lapse at %v", doneAt, lapse)
	}
	if d := doneAt.Sub(frozeAt); d > ttl {
		t.Errorf("Done closed %v after the freeze, more than the TTL %v", d, ttl)
	}
	if now := time.Now(); ka.Fence()(now, now.UnixMilli()) {
		t.Error("the fence passes after Done")
	}
	if !errors.Is(ka.Err(), ErrLeaseLost) {
		t.Errorf("Err after the loss: got %v, want ErrLeaseLost", ka.Err())
	}
	var ra run
	select {
	case ra = <-ranA:
	case <-time.After(time.Second):
		t.Fatal("A's generator still issues IDs after Done")
	}
	if !errors.Is(ra.err, snowflake.ErrFenced) {
		t.Errorf("A's generator stopped with %v, want snowflake.ErrFenced", ra.err)
	}
	if ra.n == 0 || !ra.lastOK.Before(lapse) {
		t.Errorf("A issued %d IDs, the last at %v: want some, all before the possible lapse at %v", ra.n, ra.lastOK, lapse)
	}

	// Frozen past the TTL: renewals still queued in the server's sockets
	// are read after the lapse, and refused.
	time.Sleep(time.Until(lapse) + 500*time.Millisecond)
	srv.signal(syscall.SIGCONT)

	// B, another client, acquires until it holds A's worker ID. The server
	// may have renewed A's lease once more than A saw (an answer lost in
	// the freeze), so A's worker ID may come free up to a renewal later.
	b := newTestClient(t, Config{URLs: []string{srv.URL}})
	var kb *Keeper
	for deadline := time.Now().Add(2 * ttl); kb == nil; {
		k, err := NewKeeper(ctx, KeeperConfig{Generator: b.Generator()})
		switch {
		case errors.Is(err, ErrNoAvailableID) && time.Now().Before(deadline):
			time.Sleep(100 * time.Millisecond)
			continue
		case err != nil:
			t.Fatalf("B's NewKeeper: %v", err)
		}
		defer k.Close(context.Background(), 0)
		if k.WorkerID() == ka.WorkerID() {
			kb = k
		}
	}
	layout := genA.Layout()
	pa, _ := layout.Decompose(ra.maxID)
	if kb.StartAfterMS() < pa.TimestampMS {
		t.Errorf("B's floor %d is below A's last timestamp %d", kb.StartAfterMS(), pa.TimestampMS)
	}
	genB, err := snowflake.New(kb.Settings(snowflake.Settings{WorkerBits: 2}))
	if err != nil {
		t.Fatal(err)
	}
	// The floor may be ahead of the clock: A's renewals reserved up to a
	// TTL ahead (the server also records a refused renewal's reservation),
	// and B must wait until its clock passes it.
	deadline := time.Now().Add(2 * ttl)
	for n := 0; n < 10000; {
		id, err := genB.Next()
		if errors.Is(err, snowflake.ErrClockDriftTryLater) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("B's generator: %v", err)
		}
		n++
		if id <= ra.maxID {
			t.Fatalf("B issued %d, not above A's highest %d", id, ra.maxID)
		}
	}
}
