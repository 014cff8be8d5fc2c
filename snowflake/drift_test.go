package snowflake

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

func TestClockDriftTiers(t *testing.T) {
	const ms, ns = time.Millisecond, time.Nanosecond
	type outcome int
	const (
		issued outcome = iota
		waited
		tryLater
		stopped
	)
	tests := []struct {
		block, errMax time.Duration // 0 means the defaults: 10ms, 1s
		behind        time.Duration
		want          outcome
	}{
		{0, 0, 0, issued}, // at the start of the last millisecond: not behind
		{0, 0, ns, waited},
		{0, 0, 10 * ms, waited},
		{0, 0, 10*ms + ns, tryLater},
		{0, 0, 11 * ms, tryLater},
		{0, 0, time.Second, tryLater},
		{0, 0, time.Second + ns, stopped},
		{0, 0, time.Second + ms, stopped},
		{0, 0, time.Hour, stopped},
		{50 * ms, 200 * ms, 50 * ms, waited},
		{50 * ms, 200 * ms, 50*ms + ns, tryLater},
		{50 * ms, 200 * ms, 200 * ms, tryLater},
		{50 * ms, 200 * ms, 200*ms + ns, stopped},
		// With no try-later tier, block is the only grace.
		{20 * ms, 20 * ms, 20 * ms, waited},
		{20 * ms, 20 * ms, 20*ms + ns, stopped},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("block %v error %v behind %v", tt.block, tt.errMax, tt.behind)
		t.Run(name, func(t *testing.T) {
			c := testclock.New(t0)
			g := newFakeGenerator(t, c, Settings{MaxDriftBlock: tt.block, MaxDriftError: tt.errMax, DisableRandomStart: true})
			first, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			lastMS := t0.UnixMilli()
			c.Set(msStart(lastMS).Add(-tt.behind))

			id, err := g.Next()
			waits := c.Waits()
			switch tt.want {
			case issued, waited:
				if err != nil || id != first+1 {
					t.Fatalf("Next() = %d, %v, want %d (the next sequence of the last millisecond)", id, err, first+1)
				}
				var want []time.Duration
				if tt.want == waited {
					want = []time.Duration{tt.behind}
				}
				if !slices.Equal(waits, want) {
					t.Errorf("waits = %v, want %v", waits, want)
				}
				return
			case tryLater:
				if !errors.Is(err, ErrClockDriftTryLater) {
					t.Fatalf("Next() = %d, %v, want %v", id, err, ErrClockDriftTryLater)
				}
				// Nothing moved: once the clock is back, the sequence goes on.
				c.Set(t0)
				if id, err := g.Next(); err != nil || id != first+1 {
					t.Errorf("Next() after the clock came back = %d, %v, want %d", id, err, first+1)
				}
			case stopped:
				if !errors.Is(err, ErrClockDriftTooLargeToRecover) {
					t.Fatalf("Next() = %d, %v, want %v", id, err, ErrClockDriftTooLargeToRecover)
				}
				// Stopped for good, whatever the clock does next.
				for _, now := range []time.Time{t0, t0.Add(time.Hour)} {
					c.Set(now)
					if _, err := g.Next(); !errors.Is(err, ErrClockDriftTooLargeToRecover) {
						t.Errorf("Next() at %v after stopping = %v, want %v", now, err, ErrClockDriftTooLargeToRecover)
					}
					if err := g.NextN(make([]int64, 2)); !errors.Is(err, ErrClockDriftTooLargeToRecover) {
						t.Errorf("NextN() at %v after stopping = %v, want %v", now, err, ErrClockDriftTooLargeToRecover)
					}
				}
				if got := g.LastTimestampMS(); got != lastMS {
					t.Errorf("LastTimestampMS() = %d, want %d", got, lastMS)
				}
			}
			if len(waits) != 0 {
				t.Errorf("waits = %v, want none: beyond the block tier Next answers at once", waits)
			}
		})
	}
}

func TestClockDriftWithSequenceUsedUp(t *testing.T) {
	c := testclock.New(t0)
	g := newFakeGenerator(t, c, Settings{WorkerBits: 21, DisableRandomStart: true}) // 2 per ms
	for range 2 {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	lastMS := t0.UnixMilli()
	c.Set(msStart(lastMS).Add(-5 * time.Millisecond))
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	// Back to the last millisecond, then on to the next, as it is used up.
	if w := c.Waits(); !slices.Equal(w, []time.Duration{5 * time.Millisecond, time.Millisecond}) {
		t.Errorf("waits = %v, want [5ms 1ms]", w)
	}
	if p := mustDecompose(t, g, id); p.TimestampMS != lastMS+1 || p.Sequence != 0 {
		t.Errorf("ID = %+v, want timestamp %d, sequence 0", p, lastMS+1)
	}
}

func TestStartAfterFloor(t *testing.T) {
	const ms = time.Millisecond
	floor := t0.Add(10 * time.Minute).UnixMilli()
	tests := []struct {
		name  string
		now   time.Time
		waits []time.Duration // nil with ok false: ErrClockDriftTryLater
		ok    bool
	}{
		{"10 minutes behind", msStart(floor).Add(-10 * time.Minute), nil, false},
		{"beyond the error tier: still only try later", msStart(floor).Add(-time.Second - ms), nil, false},
		{"just beyond the block tier", msStart(floor).Add(-10*ms - time.Nanosecond), nil, false},
		{"exactly the block tier", msStart(floor).Add(-10 * ms), []time.Duration{10 * ms, ms}, true},
		{"inside the floor millisecond", msStart(floor).Add(250 * time.Microsecond), []time.Duration{750 * time.Microsecond}, true},
		{"past the floor", msStart(floor + 1), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testclock.New(tt.now)
			g := newFakeGenerator(t, c, Settings{StartAfterMS: floor, WorkerID: 3})
			id, err := g.Next()
			if !tt.ok {
				if !errors.Is(err, ErrClockDriftTryLater) {
					t.Fatalf("Next() = %d, %v, want %v", id, err, ErrClockDriftTryLater)
				}
				if g.stopErr != nil {
					t.Errorf("generator stopped: %v; a floor from another holder must never stop it", g.stopErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Next() = %v", err)
			}
			if w := c.Waits(); !slices.Equal(w, tt.waits) {
				t.Errorf("waits = %v, want %v", w, tt.waits)
			}
			if p := mustDecompose(t, g, id); p.TimestampMS != floor+1 {
				t.Errorf("timestamp = %d, want %d", p.TimestampMS, floor+1)
			}
		})
	}
}

// TestStartAfterFloorNeverRepeats plays a new holder whose clock is 10
// minutes behind the previous holder's last timestamp, and walks it forward.
func TestStartAfterFloorNeverRepeats(t *testing.T) {
	floor := t0.Add(10 * time.Minute).UnixMilli()
	c := testclock.New(t0)
	g := newFakeGenerator(t, c, Settings{StartAfterMS: floor, WorkerID: 3})
	// The previous holder's highest possible ID.
	ceiling, err := g.Layout().Compose(floor, g.Layout().MaxWorkerID(), g.Layout().MaxSequence())
	if err != nil {
		t.Fatal(err)
	}
	var tryLater, ok int
	var prev int64
	for c.Now().Before(msStart(floor).Add(50 * time.Millisecond)) {
		id, err := g.Next()
		switch {
		case errors.Is(err, ErrClockDriftTryLater):
			tryLater++
			if ok > 0 {
				t.Fatalf("try later after IDs were issued: %v", err)
			}
		case err != nil:
			t.Fatalf("Next() at %v = %v, want success or %v", c.Now(), err, ErrClockDriftTryLater)
		default:
			ok++
			if id <= ceiling || id <= prev {
				t.Fatalf("ID %d at %v, want above the floor's ceiling %d and the previous %d", id, c.Now(), ceiling, prev)
			}
			if p := mustDecompose(t, g, id); p.TimestampMS <= floor {
				t.Fatalf("timestamp %d, want after the floor %d", p.TimestampMS, floor)
			}
			prev = id
		}
		c.Add(3*time.Millisecond + 7*time.Microsecond)
	}
	if tryLater == 0 || ok == 0 {
		t.Errorf("try later %d times, issued %d IDs: want both", tryLater, ok)
	}
}

func TestPreciseWaitRealClock(t *testing.T) {
	g, err := New(Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{300 * time.Microsecond, 5 * time.Millisecond} {
		now := time.Now()
		until := now.Add(d)
		g.waitUntil(now, until)
		end := time.Now()
		if end.Before(until) {
			t.Errorf("waitUntil(%v) returned %v early", d, until.Sub(end))
		}
		t.Logf("waitUntil(%v) overshot by %v", d, end.Sub(until))
	}
}
