package segment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// startFetchLocked starts the fetch loop unless the allocator is closed:
// Close has then stopped waiting for fetch goroutines, and a range fetched
// now could never be given back. Nor does a period that ended fetch: it
// can issue nothing more.
func (b *buffer) startFetchLocked() {
	a := b.a
	a.lifeMu.Lock()
	defer a.lifeMu.Unlock()
	if a.closed.Load() || b.per != nil && b.per.ended {
		return
	}
	b.fetching = true
	a.wg.Add(1)
	go b.fetchLoop()
}

// fetchLoop fetches one segment, retrying store faults with backoff while
// requests keep being served from what is buffered. It owns b.fetching.
func (b *buffer) fetchLoop() {
	defer b.a.wg.Done()
	backoff := 50 * time.Millisecond
	for {
		b.mu.Lock()
		if b.per != nil && b.per.ended { // retired before this attempt
			b.endPeriodFetchLocked()
			b.mu.Unlock()
			return
		}
		step := b.nextStepLocked()
		plain, want := step, b.want
		if want > 0 {
			// A batch waits for more than is buffered: ask for all it
			// lacks at once, so that it is claimed whole (batch.go).
			step = max(cmp.Or(step, b.rowStep), want)
			b.want = 0
		}
		if reg := b.a.region; !reg.Single() {
			// step IDs of the region are step·Count numbers; the
			// first fetch's step is the row's as last listed.
			step = reg.delta(cmp.Or(step, b.rowStep))
		}
		rowStepSet := b.rowStepSet
		b.mu.Unlock()

		// Not derived from the allocator's lifetime: a fetch under way when
		// Close starts is finished, so its range can still be given back.
		ctx, cancel := context.WithTimeout(context.Background(), b.a.cfg.FetchTimeout)
		began := b.a.now()
		var f Fetched
		var err error
		// highWater, the store's max_id after this instance's last fetch,
		// at or past the format's last number: the tag is spent, and
		// asking the store would only move max_id further.
		k := b.kind
		asked := k.broken == nil && b.highWater < k.limit
		switch {
		case k.broken != nil:
			err = k.broken
		case !asked:
			err = ErrExhausted
		case b.per != nil:
			f, err = b.a.periods.FetchPeriod(ctx, b.tag, b.per.key.Stamp, b.per.d.f.Start(), k.limit, step)
		default:
			f, err = b.a.store.Fetch(ctx, b.tag, k.limit, step)
		}
		cancel()
		ended := b.a.now()
		if b.per != nil && !f.Now.IsZero() {
			// Before the range is served (ready is closed below), so that
			// no ID is issued on a clock this fetch found wrong.
			b.a.clock.observe(began, ended, f.Now)
		}
		// The range's numbers, and the indexes of the region's among
		// them (region.go): [lo, hi], the same in a single region.
		first := f.MaxID - f.Size + 1
		lo, hi := b.a.region.index(first), b.a.region.indexBelow(min(f.MaxID, k.limit))
		switch {
		case err != nil:
		case first > k.limit: // a store that does not stop at the limit
			err = ErrExhausted
		case first <= b.highWater: // only fetch loops use it, one at a time
			err = fmt.Errorf("%w: got (%d, %d], had up to %d", ErrRewound, f.MaxID-f.Size, f.MaxID, b.highWater)
		case b.per != nil && first < b.per.d.f.Start():
			// The period's counter began below the tag's start: a row
			// the store made wrong, whose numbers this tag has not.
			err = fmt.Errorf("%w: got (%d, %d] of period %d, below the tag's start %d",
				ErrRewound, f.MaxID-f.Size, f.MaxID, b.per.key.Stamp, b.per.d.f.Start())
		}
		if obs := b.a.cfg.Observer; obs != nil && asked {
			obs.Fetched(b.tag, ended.Sub(began), err)
		}

		b.mu.Lock()
		tr := b.trouble
		if errors.Is(err, ErrRewound) && (tr == nil || !errors.Is(tr.err, ErrRewound)) {
			b.a.cfg.Logger.Error("segment fetch refused: range overlaps one already received", "app_tag", b.tag, "err", err)
		}
		// Log transitions only: a store down for an hour is two lines.
		switch log := b.a.cfg.Logger; {
		case err == nil && tr != nil:
			log.Info("segment fetch recovered", "app_tag", b.tag)
		case err != nil && tr == nil:
			log.Warn("segment fetch failed; retrying in the background", "app_tag", b.tag, "err", err)
		}
		var late int64 // a range that came after its period ended
		if err == nil {
			// Clamped to the format's last number (MaxUsableID for
			// sequential): the rest of the range has no IDs.
			if b.per != nil && b.per.ended {
				late = hi - lo + 1
			} else {
				// A tag's first range is plain: most tags of many are
				// fetched once. One fetched again is in use, and its
				// ranges are padded against contention.
				b.queueLocked(newSpan(lo, hi, f.MaxID, b.step != 0))
			}
			b.highWater = f.MaxID
			// The adaptive step counts the region's IDs, as the
			// row's step does (0 after a range too small to hold
			// one: the next fetch asks for the row's step). A
			// batch's shortfall does not grow it.
			b.step = f.Size / b.a.region.count()
			if want > 0 {
				b.step = min(b.step, max(plain, f.Step))
			}
			b.lastFetch, b.fetchTook = ended, ended.Sub(began)
			if b.rowStepSet == rowStepSet { // else a newer step was set meanwhile (setRowStep)
				b.rowStep = f.Step
			}
			b.trouble = nil
		} else {
			if tr == nil {
				tr = &fetchTrouble{poke: make(chan struct{}, 1)}
				b.trouble = tr
			}
			tr.err, tr.at = err, ended
		}
		b.wakeLocked()
		if err == nil || isFinal(err) || b.a.closed.Load() || b.per != nil && b.per.ended {
			b.fetching = false
			b.mu.Unlock()
			b.waste(late, WastePeriodEnded)
			return
		}
		b.mu.Unlock()
		select { // a poke from before this attempt is answered by it
		case <-tr.poke:
		default:
		}

		// Equal jitter: half the backoff fixed, half random. After an
		// outage every tag of every instance failed at about the same
		// moment; without it they would all retry in lockstep, each
		// retry a burst on the store just back. The fixed half keeps a
		// tag's retries at least backoff/2 apart.
		t := time.NewTimer(backoff/2 + b.a.randN(backoff/2+1))
		select {
		case <-t.C:
		case <-tr.poke:
			t.Stop()
		case <-b.a.closing:
			t.Stop()
			b.mu.Lock()
			b.fetching = false
			b.mu.Unlock()
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// nextStepLocked is Leaf's adaptive step: a segment that lasted under
// TargetDuration doubles the step, one that lasted twice that halves it, never
// below the row's step nor (unless the row's step is larger) above MaxStep,
// nor, for a dated tag, above its period's share (periodStepCap).
// 0 asks the store for the row's own step.
func (b *buffer) nextStepLocked() int64 {
	if b.step == 0 {
		return 0
	}
	if b.per != nil {
		return max(min(b.adaptedStepLocked(), b.per.d.stepCap), b.rowStep)
	}
	return b.adaptedStepLocked()
}

// adaptedStepLocked is the adaptive step, b.step being set.
func (b *buffer) adaptedStepLocked() int64 {
	step := b.step
	lasted := b.a.now().Sub(b.lastFetch)
	switch {
	case lasted < TargetDuration:
		if 2*step <= b.a.cfg.MaxStep {
			step *= 2
		}
	case lasted >= 2*TargetDuration:
		step /= 2
	}
	return max(step, b.rowStep)
}

// endPeriodFetchLocked ends the fetch loop of a period that ended before
// its attempt, waking whoever waits for the attempt: they find the period
// ended and claim again in the next.
func (b *buffer) endPeriodFetchLocked() {
	b.fetching = false
	b.wakeLocked()
}
