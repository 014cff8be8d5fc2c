package snowflake

import (
	"fmt"
	"math/rand/v2"
	"time"
)

const (
	// DefaultMaxDriftBlock is how far behind the clock may be for Next to
	// wait it out rather than fail.
	DefaultMaxDriftBlock = 10 * time.Millisecond
	// DefaultMaxDriftError is how far behind the clock may be before the
	// generator stops for good.
	DefaultMaxDriftError = time.Second
	// minLifetime is how long a new layout must last from now: uid-generator's
	// default layout ran out in 2024, eight years after its epoch.
	minLifetime = 10 // years
	// randomStartLimit bounds the random first sequence of each millisecond:
	// enough to spread IDs over id%N shards at low traffic, little enough to
	// cost under 2.5% of a 12-bit sequence's capacity.
	randomStartLimit = 100
)

// Settings configures a Generator. The zero value of every field is a usable
// default; New validates the rest.
type Settings struct {
	// Layout, when set, is the layout as its owner validated it once, at
	// the start of a deployment (NewLayout, then CheckLifetime): a
	// generator built on it serves until its time bits run out, then
	// returns ErrTimeExhausted, so one rebuilt for a new worker lease years
	// later is not refused by the 10-year rule. Set it or Epoch and
	// WorkerBits, not both (ErrInvalidSettings). A Layout NewLayout did not
	// make, or whose epoch is after now: ErrInvalidLayout.
	Layout Layout
	// Epoch is the instant timestamps count from. Zero means
	// 2026-01-01T00:00:00Z. Outside the years 1..9999 or after now:
	// ErrInvalidLayout. So early that the 41 time bits run out within 10
	// years: ErrLayoutTooShort.
	Epoch time.Time
	// WorkerBits is the worker-ID width; the sequence gets 22-WorkerBits.
	// 0 means DefaultWorkerBits (10). Outside 1..21: ErrInvalidLayout.
	WorkerBits int
	// WorkerID identifies this generator among those sharing the layout.
	// Outside 0..2^WorkerBits-1: ErrInvalidWorkerID.
	WorkerID int64
	// DisableRandomStart makes every millisecond's sequence start at 0. By
	// default it starts at a random value below min(100, capacity/2), so that
	// at low traffic IDs are not all even and id%N sharding stays balanced.
	DisableRandomStart bool
	// MaxDriftBlock: when the clock is behind the last issued timestamp by at
	// most this, Next waits until it catches up and succeeds. Drift is
	// measured to the start of the millisecond the last ID carries, as that
	// is when the generator can issue again. 0 means DefaultMaxDriftBlock
	// (10ms). Negative: ErrInvalidSettings.
	MaxDriftBlock time.Duration
	// MaxDriftError: when the clock is behind by more than MaxDriftBlock and
	// at most this, Next returns ErrClockDriftTryLater at once; beyond it,
	// ErrClockDriftTooLargeToRecover, and the generator stops for good.
	// 0 means DefaultMaxDriftError (1s). Negative or below MaxDriftBlock (as
	// defaulted): ErrInvalidSettings.
	MaxDriftError time.Duration
	// StartAfterMS is a Unix-millisecond floor: every ID carries a timestamp
	// strictly after it. It is the previous holder's last timestamp of this
	// worker ID, so a new holder with a slower clock cannot repeat its IDs.
	// While the clock is at or behind the floor by at most MaxDriftBlock,
	// Next waits; further behind, it returns ErrClockDriftTryLater, and never
	// stops the generator for it, as the floor is not this generator's own
	// history. 0 means no floor. Negative: ErrInvalidSettings.
	StartAfterMS int64
	// Fence, if set, is asked before every ID is issued, with the clock
	// reading and the Unix millisecond the ID would carry. False means the
	// worker lease is not provably held for it: Next returns ErrFenced and
	// the generator's state does not move. It is called with the generator's
	// lock held, so it must be fast and must not call the Generator.
	Fence func(now time.Time, unixMS int64) bool
	// Now reads the clock. Nil means time.Now, whose monotonic reading is
	// passed on to Fence untouched; the ID's timestamp is the wall-clock
	// millisecond. If Now is set, set Sleep too: the default wait spins until
	// Now reaches its target.
	Now func() time.Time
	// Sleep waits for the clock to move on: to the next millisecond when a
	// millisecond's sequence is used up, or for a clock drift within
	// MaxDriftBlock. Nil means a precise wait that spins through the last
	// stretch, because time.Sleep can overshoot by a millisecond and so cost
	// a millisecond's worth of IDs. When set (a fake clock in tests), it is
	// called for every wait.
	Sleep func(time.Duration)
	// Rand returns uniformly random bits for the random sequence start. Nil
	// means math/rand/v2.Uint64.
	Rand func() uint64
	// Observer, if set, is told of the IDs issued and of each clock drift
	// (for metrics); see Observer for when each method is called.
	Observer Observer
}

// config is Settings with defaults applied and every field checked.
type config struct {
	layout     Layout
	workerID   int64
	startBound uint64 // the random start is below this; 0 means start at 0
	block      time.Duration
	errMax     time.Duration
	floorMS    int64
	fence      func(time.Time, int64) bool
	now        func() time.Time
	sleep      func(time.Duration)
	observer   Observer
	rand       func() uint64
}

// Check reports whether New would accept s, as New's errors, without
// building a generator.
func (s Settings) Check() error {
	_, err := s.resolve()
	return err
}

func (s Settings) resolve() (config, error) {
	c := config{
		workerID: s.WorkerID,
		block:    s.MaxDriftBlock,
		errMax:   s.MaxDriftError,
		floorMS:  s.StartAfterMS,
		fence:    s.Fence,
		now:      s.Now,
		sleep:    s.Sleep,
		observer: s.Observer,
		rand:     s.Rand,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.rand == nil {
		c.rand = rand.Uint64
	}
	now := c.now()
	switch {
	case s.Layout != Layout{} && (!s.Epoch.IsZero() || s.WorkerBits != 0):
		return config{}, fmt.Errorf("both a Layout and an Epoch or WorkerBits: %w", ErrInvalidSettings)
	case s.Layout != Layout{}:
		if err := s.Layout.check(); err != nil {
			return config{}, err
		}
		c.layout = s.Layout
		if c.layout.Epoch.After(now) {
			return config{}, epochAfter(c.layout, now)
		}
	default:
		var err error
		if c.layout, err = NewLayout(s.Epoch, s.WorkerBits); err != nil {
			return config{}, err
		}
		if err := c.layout.CheckLifetime(now); err != nil {
			return config{}, err
		}
	}
	if c.workerID < 0 || c.workerID > c.layout.MaxWorkerID() {
		return config{}, fmt.Errorf("worker ID %d outside 0..%d: %w", c.workerID, c.layout.MaxWorkerID(), ErrInvalidWorkerID)
	}
	if c.block == 0 {
		c.block = DefaultMaxDriftBlock
	}
	if c.errMax == 0 {
		c.errMax = DefaultMaxDriftError
	}
	switch {
	case c.block < 0:
		return config{}, fmt.Errorf("max drift block %v is negative: %w", c.block, ErrInvalidSettings)
	case c.errMax < c.block:
		return config{}, fmt.Errorf("max drift error %v is below max drift block %v: %w", c.errMax, c.block, ErrInvalidSettings)
	case c.floorMS < 0:
		return config{}, fmt.Errorf("start-after %d is negative: %w", c.floorMS, ErrInvalidSettings)
	}
	if !s.DisableRandomStart {
		// Half the capacity at most, so narrow sequences keep room for bursts.
		c.startBound = uint64(min(randomStartLimit, (c.layout.MaxSequence()+1)/2))
		if c.startBound <= 1 {
			c.startBound = 0
		}
	}
	return c, nil
}
