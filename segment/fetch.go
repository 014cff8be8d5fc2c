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
	if a.closed.Load() || b.periodEndedLocked() {
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
		ask, ok := b.nextAsk()
		if !ok {
			return
		}
		got := b.fetchOnce(ask)
		tr, done := b.record(ask, got)
		if done || !b.waitRetry(tr, backoff) {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// fetchAsk is what one attempt asks the store for.
type fetchAsk struct {
	step       int64  // in the store's numbers; 0 asks for the row's step
	plain      int64  // the adaptive step, without a waiting batch's want
	want       int64  // the IDs a waiting batch lacks; 0 for none
	rowStepSet uint32 // b.rowStepSet when the attempt began
}

// fetchGot is what one attempt got: a range, or why there is none.
type fetchGot struct {
	f            Fetched
	err          error
	lo, hi       int64 // the indexes of the region's numbers in f (region.go)
	began, ended time.Time
}

// nextAsk reads what the next attempt asks for; false when b's period
// ended before it, which ends the loop.
func (b *buffer) nextAsk() (fetchAsk, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.periodEndedLocked() { // retired before this attempt
		b.endPeriodFetchLocked()
		return fetchAsk{}, false
	}
	step := b.nextStepLocked()
	ask := fetchAsk{plain: step, want: b.want, rowStepSet: b.rowStepSet}
	if ask.want > 0 {
		// A batch waits for more than is buffered: ask for all it
		// lacks at once, so that it is claimed whole (batch.go).
		step = max(cmp.Or(step, b.rowStep), ask.want)
		b.want = 0
	}
	ask.step = b.regionStepLocked(step)
	return ask, true
}

// regionStepLocked is step IDs as the store counts them: in a region of
// several, step·Count numbers, the first fetch's step being the row's as
// last listed.
func (b *buffer) regionStepLocked(step int64) int64 {
	if reg := b.a.region; !reg.Single() {
		return reg.delta(cmp.Or(step, b.rowStep))
	}
	return step
}

// fetchOnce makes one attempt: asks the store for ask's range, unless the
// tag is broken or spent, and checks what it answers.
func (b *buffer) fetchOnce(ask fetchAsk) fetchGot {
	// Not derived from the allocator's lifetime: a fetch under way when
	// Close starts is finished, so its range can still be given back.
	ctx, cancel := context.WithTimeout(context.Background(), b.a.cfg.FetchTimeout)
	got := fetchGot{began: b.a.now()}
	// highWater, the store's max_id after this instance's last fetch,
	// at or past the format's last number: the tag is spent, and
	// asking the store would only move max_id further.
	k := b.kind
	asked := k.broken == nil && b.highWater < k.limit
	switch {
	case k.broken != nil:
		got.err = k.broken
	case !asked:
		got.err = ErrExhausted
	default:
		got.f, got.err = b.storeFetch(ctx, k.limit, ask.step)
	}
	cancel()
	got.ended = b.a.now()
	b.observePeriodClock(got)
	// The range's numbers, and the indexes of the region's among them
	// (region.go): [lo, hi], the same in a single region.
	got.lo, got.hi = b.a.region.index(got.f.MaxID-got.f.Size+1), b.a.region.indexBelow(min(got.f.MaxID, k.limit))
	if got.err == nil {
		got.err = b.checkRange(got.f, k.limit)
	}
	if obs := b.a.cfg.Observer; obs != nil && asked {
		obs.Fetched(b.tag, got.ended.Sub(got.began), got.err)
	}
	return got
}

// storeFetch claims step numbers up to limit: of the period's counter for
// a dated tag, of the row's max_id for any other.
func (b *buffer) storeFetch(ctx context.Context, limit, step int64) (Fetched, error) {
	if b.per != nil {
		return b.a.periods.FetchPeriod(ctx, b.tag, b.per.key.Stamp, b.per.d.f.Start(), limit, step)
	}
	return b.a.store.Fetch(ctx, b.tag, limit, step)
}

// observePeriodClock holds this instance's clock to the store's time that
// a dated tag's fetch read. It runs before the range is served (record
// wakes the waiters), so that no ID is issued on a clock this fetch found
// wrong.
func (b *buffer) observePeriodClock(got fetchGot) {
	if b.per != nil && !got.f.Now.IsZero() {
		b.a.clock.observe(got.began, got.ended, got.f.Now)
	}
}

// checkRange refuses a range f that holds no new IDs of the tag: one past
// limit, or one that overlaps what this instance already received.
func (b *buffer) checkRange(f Fetched, limit int64) error {
	switch first := f.MaxID - f.Size + 1; {
	case first > limit: // a store that does not stop at the limit
		return ErrExhausted
	case first <= b.highWater: // only fetch loops use it, one at a time
		return fmt.Errorf("%w: got (%d, %d], had up to %d", ErrRewound, f.MaxID-f.Size, f.MaxID, b.highWater)
	}
	return b.checkPeriodRange(f)
}

// checkPeriodRange refuses a dated tag's range that begins below the
// tag's start: a period's counter the store made wrong, whose numbers
// this tag has not.
func (b *buffer) checkPeriodRange(f Fetched) error {
	if b.per == nil || f.MaxID-f.Size+1 >= b.per.d.f.Start() {
		return nil
	}
	return fmt.Errorf("%w: got (%d, %d] of period %d, below the tag's start %d",
		ErrRewound, f.MaxID-f.Size, f.MaxID, b.per.key.Stamp, b.per.d.f.Start())
}

// record keeps an attempt's outcome and wakes whoever waits for it. It
// returns b's trouble, and whether the loop is over: a range received, a
// final error, the allocator closed or the period ended.
func (b *buffer) record(ask fetchAsk, got fetchGot) (*fetchTrouble, bool) {
	b.mu.Lock()
	tr := b.trouble
	b.logFetchLocked(tr, got.err)
	var late int64 // a range that came after its period ended
	if got.err == nil {
		late = b.receivedLocked(ask, got)
	} else {
		if tr == nil {
			tr = &fetchTrouble{poke: make(chan struct{}, 1)}
			b.trouble = tr
		}
		tr.err, tr.at = got.err, got.ended
	}
	b.wakeLocked()
	if got.err == nil || isFinal(got.err) || b.a.closed.Load() || b.periodEndedLocked() {
		b.fetching = false
		b.mu.Unlock()
		b.waste(late, WastePeriodEnded)
		return tr, true
	}
	b.mu.Unlock()
	return tr, false
}

// logFetchLocked logs an attempt's error err when the trouble tr before it
// was another: a store down for an hour is two lines.
func (b *buffer) logFetchLocked(tr *fetchTrouble, err error) {
	log := b.a.cfg.Logger
	if errors.Is(err, ErrRewound) && (tr == nil || !errors.Is(tr.err, ErrRewound)) {
		log.Error("segment fetch refused: range overlaps one already received", "app_tag", b.tag, "err", err)
	}
	switch {
	case err == nil && tr != nil:
		log.Info("segment fetch recovered", "app_tag", b.tag)
	case err != nil && tr == nil:
		log.Warn("segment fetch failed; retrying in the background", "app_tag", b.tag, "err", err)
	}
}

// receivedLocked queues the range got received and learns its steps. It
// returns the count of its IDs, when it came after its period ended, that
// are wasted.
func (b *buffer) receivedLocked(ask fetchAsk, got fetchGot) (late int64) {
	// [lo, hi] is clamped to the format's last number (MaxUsableID for
	// sequential): the rest of the range has no IDs.
	if b.periodEndedLocked() {
		late = got.hi - got.lo + 1
	} else {
		// A tag's first range is plain: most tags of many are fetched
		// once. One fetched again is in use, and its ranges are padded
		// against contention.
		b.queueLocked(newSpan(got.lo, got.hi, got.f.MaxID, b.step != 0))
		b.countRefillLocked()
	}
	b.highWater = got.f.MaxID
	// The adaptive step counts the region's IDs, as the row's step does
	// (0 after a range too small to hold one: the next fetch asks for
	// the row's step). A batch's shortfall does not grow it.
	b.step = got.f.Size / b.a.region.count()
	if ask.want > 0 {
		b.step = min(b.step, max(ask.plain, got.f.Step))
	}
	b.lastFetch, b.fetchTook = got.ended, got.ended.Sub(got.began)
	if b.rowStepSet == ask.rowStepSet { // else a newer step was set meanwhile (setRowStep)
		b.rowStep = got.f.Step
	}
	b.trouble = nil
	return late
}

// countRefillLocked counts a range queued on b's owner: b itself, whose mu
// is held, or a dated tag's buffer, whose mu comes after a period
// buffer's (datedTag's lock order).
func (b *buffer) countRefillLocked() {
	o := b.owner()
	if o == b {
		b.refills++
		return
	}
	o.mu.Lock()
	o.refills++
	o.mu.Unlock()
}

// waitRetry waits before the next attempt: backoff with equal jitter,
// cut short by a poke (a request that found nothing buffered). False
// when the allocator closes meanwhile, which ends the loop.
func (b *buffer) waitRetry(tr *fetchTrouble, backoff time.Duration) bool {
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
		return false
	}
	return true
}

// periodEndedLocked reports whether b is a dated tag's period that ended.
func (b *buffer) periodEndedLocked() bool { return b.per != nil && b.per.ended }

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
