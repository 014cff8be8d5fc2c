package snowflake

import (
	"sync"
	"time"
)

// Generator issues unique, strictly increasing IDs for one worker ID. It is
// safe for concurrent use and starts no goroutines. Make one with New.
type Generator struct {
	config
	epochMS    int64
	maxMS      int64 // the highest Unix ms the time bits can carry
	workerPart int64 // the worker ID, already shifted into place
	timeShift  int   // the worker and sequence bits below the timestamp
	seqMax     int64

	mu sync.Mutex
	// lastMS is the highest timestamp issued, or the floor below the first
	// one (StartAfterMS, or the millisecond before the epoch).
	lastMS int64
	// seq is the last sequence issued in lastMS; before the first ID it is
	// seqMax, so the floor millisecond itself is never used.
	seq     int64
	issued  bool
	stopErr error // set once, when the clock fell too far behind
	// stopBehind is how far behind the clock was when stopErr was set.
	stopBehind time.Duration
}

// New returns a Generator for s. It returns ErrInvalidLayout for worker bits
// outside 1..21 or an epoch outside the years 1..9999 or after now;
// ErrLayoutTooShort if the time bits run out less than 10 years from now;
// ErrInvalidWorkerID for a worker ID outside 0..2^WorkerBits-1; and
// ErrInvalidSettings for a negative MaxDriftBlock, MaxDriftError or
// StartAfterMS, or a MaxDriftError below MaxDriftBlock. Errors wrap these
// sentinels with detail.
func New(s Settings) (*Generator, error) {
	c, err := s.resolve()
	if err != nil {
		return nil, err
	}
	g := &Generator{
		config:     c,
		epochMS:    c.layout.Epoch.UnixMilli(),
		workerPart: c.workerID << c.layout.SequenceBits,
		seqMax:     c.layout.MaxSequence(),
		timeShift:  c.layout.timeShift(),
	}
	g.maxMS = g.epochMS + maxElapsedMS
	// A floor below the epoch would let a clock that falls back before the
	// epoch produce a negative offset; the epoch's own floor stops it.
	g.lastMS = max(c.floorMS, g.epochMS-1)
	g.seq = g.seqMax
	return g, nil
}

// Next returns a new ID, greater than every ID this Generator issued before.
// It waits when the millisecond's sequence is used up or the clock is behind
// by at most MaxDriftBlock. It returns ErrClockDriftTryLater when the clock
// is further behind (or behind StartAfterMS by more than MaxDriftBlock),
// ErrClockDriftTooLargeToRecover when it is behind the last issued timestamp
// by more than MaxDriftError (then and on every later call), ErrFenced when
// Fence refuses, and ErrTimeExhausted once the time bits have run out.
func (g *Generator) Next() (int64, error) {
	g.mu.Lock()
	id, _, err := g.nextLocked()
	g.mu.Unlock()
	if err == nil && g.observer != nil {
		g.observer.Issued(1)
	}
	return id, err
}

// NextN fills dst with strictly increasing IDs, each greater than every ID
// issued before, under one lock acquisition. Errors are those of Next; on an
// error, dst holds no usable IDs, though the ones already put there count as
// issued (they are lost, never repeated).
func (g *Generator) NextN(dst []int64) error {
	err := g.nextN(dst)
	if err == nil && g.observer != nil {
		g.observer.Issued(len(dst))
	}
	return err
}

// nextN is NextN under the lock, without telling the Observer.
func (g *Generator) nextN(dst []int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := 0; i < len(dst); {
		id, now, err := g.nextLocked()
		if err != nil {
			clear(dst)
			return err
		}
		dst[i] = id
		i++
		// The rest of this millisecond's sequence needs no new clock
		// reading, which would cost more than the ID: those IDs carry the
		// millisecond just read and are issued microseconds after it. The
		// fence is still asked for each, with that reading.
		for ; i < len(dst) && g.seq < g.seqMax; i++ {
			if g.fence != nil && !g.fence(now, g.lastMS) {
				clear(dst)
				return ErrFenced
			}
			g.seq++
			dst[i] = g.compose(g.lastMS, g.seq)
		}
	}
	return nil
}

// nextLocked issues one ID and returns the clock reading it was issued at;
// g.mu must be held.
func (g *Generator) nextLocked() (int64, time.Time, error) {
	if g.stopErr != nil {
		return 0, time.Time{}, g.stopped()
	}
	for {
		now := g.now()
		ms := now.UnixMilli()
		switch {
		case ms > g.lastMS:
			if ms > g.maxMS {
				return 0, now, ErrTimeExhausted
			}
			seq := g.startSequence()
			if g.fence != nil && !g.fence(now, ms) {
				return 0, now, ErrFenced
			}
			g.lastMS, g.seq, g.issued = ms, seq, true
			return g.compose(ms, seq), now, nil
		case ms == g.lastMS && g.seq < g.seqMax:
			if g.fence != nil && !g.fence(now, ms) {
				return 0, now, ErrFenced
			}
			g.seq++
			return g.compose(ms, g.seq), now, nil
		case ms == g.lastMS:
			// Sequence used up: the next millisecond is the earliest that
			// can carry more, and waiting longer would waste its IDs.
			if g.lastMS >= g.maxMS {
				return 0, now, ErrTimeExhausted
			}
			g.waitUntil(now, time.UnixMilli(g.lastMS+1))
		default:
			if err := g.clockBehind(now); err != nil {
				return 0, now, err
			}
		}
	}
}

// startSequence returns the first sequence of a new millisecond.
func (g *Generator) startSequence() int64 {
	if g.startBound == 0 {
		return 0
	}
	return int64(g.rand() % g.startBound)
}

func (g *Generator) compose(ms, seq int64) int64 {
	return (ms-g.epochMS)<<g.timeShift | g.workerPart | seq
}

// LastTimestampMS returns the Unix millisecond of the highest timestamp
// issued, or StartAfterMS if none has been. It is what a holder reports when
// renewing or handing over its worker lease.
func (g *Generator) LastTimestampMS() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.issued {
		return g.floorMS
	}
	return g.lastMS
}

// Layout returns the generator's layout, for decomposing its IDs.
func (g *Generator) Layout() Layout { return g.layout }

// WorkerID returns the worker ID every ID of this generator carries.
func (g *Generator) WorkerID() int64 { return g.workerID }
