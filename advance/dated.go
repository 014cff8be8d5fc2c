package advance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// A dated tag (docs/api.md §11) counts its numbers in one counter per (tag,
// period stamp); its row's max_id counts nothing, so Advance leaves it and
// moves counters instead. Which ones: a forgotten write reserved a range
// of the period its instance's clock read, or of the next one shortly
// before that began (the prefetch), and an instance issues a period only
// while its clock reads it. Each instance's clock is within
// max_clock_skew of the store's (it refuses dated tags otherwise), and so
// is this machine's (Advance checks it), so an instance's reading is
// within 2 × max_clock_skew of this machine's. Hence, around now by this
// machine's clock in the tag's zone:
//
//   - the current period: instances restarted now issue it, and the lost
//     writes may have fetched in it;
//   - the previous one, always: just after a boundary an instance up to
//     2 × max_clock_skew behind still issues it, and a restore from a
//     backup taken before it began holds no row of it at all, so such an
//     instance would begin it again at start (the move makes the row at
//     start-1 and moves it). Past that margin nobody issues it, so moving
//     it always costs no number anyone can use, and keeps the choice from
//     hanging on how close to the boundary this machine's clock reads;
//   - the next one when it begins within 2 × max_clock_skew + periodLead:
//     the lost writes may have prefetched its first range, and instances
//     restarted after the advance issue it first;
//   - with -for, every period meeting the lost span as well (now − DURATION
//     − 2 × max_clock_skew on): no instance issues an ended period again,
//     so these are not needed for uniqueness, but they cost no number
//     anyone can use and leave every counter at least where the forgotten
//     writes had put it, as the store was before it forgot.
//
// How long instances take to restart does not matter: every forgotten
// write happened before the advance, so a period that begins later than
// the window's end holds none.

// periodLead bounds how long before a period begins an instance may have
// fetched its first range: segment's prefetch lead is max(1 s, 4 fetch
// times), 20 s at the 5 s fetch timeout; a minute covers that with room.
const periodLead = time.Minute

// maxPeriods bounds the periods one tag's move spans, so a -for of weeks
// on a minute tag does not write for hours: the oldest are left, which no
// instance issues again (see above), and a line says so.
const maxPeriods = 10_000

// datedStepShare is segment's periodShare: a dated tag's adaptive step
// stays at most 1/datedStepShare of a period's numbers.
const datedStepShare = 100

// PeriodCounter is the counter of one dated tag's period, as a store lists
// it (store.PeriodCounter, which this package does not import).
type PeriodCounter struct {
	AppTag string
	Stamp  int64
	MaxID  int64
}

// Periods is the part of a store Advance moves dated tags' counters in.
type Periods interface {
	// AdvancePeriod moves the counter of tag's period stamp forward by
	// by, from start-1 when the period has no row, stopping at limit, by
	// a compare-and-set; segment.ErrExhausted when it is at limit
	// already.
	AdvancePeriod(ctx context.Context, tag string, stamp, start, limit, by int64) (from, to int64, err error)
	// PeriodCounters lists every counter, for a dry run's report.
	PeriodCounters(ctx context.Context) ([]PeriodCounter, error)
	// Now reads the store's clock, the one every instance is bounded by.
	Now(ctx context.Context) (time.Time, error)
}

// clockBound is Advance.MaxClockSkew with its default.
func (a Advance) clockBound() time.Duration {
	if a.MaxClockSkew > 0 {
		return a.MaxClockSkew
	}
	return segment.DefaultMaxClockSkew
}

// window is the stretch of this machine's clock whose periods a dated
// tag's move covers (see the comment above), besides the previous period.
func (a Advance) window(now time.Time) (from, to time.Time) {
	skew := 2 * a.clockBound()
	back := skew
	if a.By == 0 {
		back += a.Estimate.For
	}
	return now.Add(-back), now.Add(skew + periodLead)
}

// checkClock reads the store's clock and refuses this machine's when the
// two differ by more than max_clock_skew, the bound instances are held
// to: the periods are chosen by it. It returns the difference (positive:
// this machine's clock is behind).
func (a Advance) checkClock(ctx context.Context, p Periods) (time.Duration, error) {
	began := a.now()
	st, err := p.Now(ctx)
	if err != nil {
		return 0, err
	}
	ended := a.now()
	skew := st.Sub(began.Add(ended.Sub(began) / 2))
	if bound := a.clockBound(); skew > bound || skew < -bound {
		return skew, fmt.Errorf("nothing moved: this machine's clock is %v off the store's, more than max_clock_skew %v; "+
			"dated tags' periods are read from it, so fix it (NTP) and run again, or leave the dated tags out of -tags",
			skew.Round(time.Millisecond), bound)
	}
	return skew, nil
}

// planDated plans the moves of dated row r: one per period of
// periodKeys, each by -by or by the estimate for its period. note is
// non-empty when maxPeriods left older periods out.
func (a Advance) planDated(r segment.Tag, now time.Time) (moves []move, note string, err error) {
	f, err := r.DatedFormat()
	if err != nil {
		return nil, "", fmt.Errorf("its row holds no format idalloc serves: %w", err)
	}
	from, to := a.window(now)
	keys, cut, err := periodKeys(f, now, from, to)
	if err != nil {
		return nil, "", err
	}
	if cut {
		note = fmt.Sprintf("tag %s: periods before %d not moved: more than %d in the span, and those ended long ago; no instance issues them again",
			shown(r.AppTag), keys[0].Stamp, maxPeriods)
	}
	for _, k := range keys {
		by := a.By
		if by == 0 {
			if by, err = a.Estimate.ByPeriod(r.Step, f.MaxSeq()-f.Start()+1, k.End.Sub(k.Start)); err != nil {
				return nil, "", err
			}
		}
		moves = append(moves, move{tag: r.AppTag, by: by, period: true, stamp: k.Stamp, start: f.Start(), limit: f.MaxSeq()})
	}
	return moves, note, nil
}

// periodKeys returns the periods of f, oldest first, that meet [from, to]
// together with the one before now's, each stamp once (a stamp the wall
// clock reads twice, when summer time ends, has one counter). cut reports
// that the oldest were left out past maxPeriods.
func periodKeys(f *dated.Format, now, from, to time.Time) (keys []dated.Key, cut bool, err error) {
	cur, err := f.Of(now)
	if err != nil {
		return nil, false, err
	}
	keys = append(keys, cur)
	// Back: the previous period always, then on while the oldest found
	// begins after from (the one before it ends there, so meets the
	// window too).
	for k := cur; len(keys) == 1 || k.Start.After(from); keys = append(keys, k) {
		if len(keys) == maxPeriods {
			cut = true
			break
		}
		if k, err = f.Of(k.Start.Add(-time.Nanosecond)); err != nil {
			return nil, false, err
		}
	}
	// Forward: each period that begins by to.
	for k := cur; !k.End.After(to); keys = append(keys, k) {
		if k, err = f.Of(k.End); err != nil {
			return nil, false, err
		}
	}
	slices.SortFunc(keys, func(a, b dated.Key) int { return a.Start.Compare(b.Start) })
	keys = slices.CompactFunc(keys, func(a, b dated.Key) bool { return a.Stamp == b.Stamp })
	return keys, cut, nil
}

// movePeriod applies m, a period's move, and returns its line of output;
// counters are the store's, read for a dry run (nil otherwise). A period
// spent already is a line, not an error: nothing of it is left to repeat.
func (a Advance) movePeriod(ctx context.Context, p Periods, m move, counters map[periodOf]int64) (line string, moved int64, err error) {
	head := fmt.Sprintf("tag %s period %d: ", shown(m.tag), m.stamp)
	if a.DryRun {
		from, ok := counters[periodOf{m.tag, m.stamp}]
		if !ok {
			from = m.start - 1 // the row the move would make
		}
		if from >= m.limit {
			return head + a.spent(m), 0, nil
		}
		to := from + min(m.by, m.limit-from)
		return head + a.periodMoved(m, from, to), to - from, nil
	}
	from, to, err := p.AdvancePeriod(ctx, m.tag, m.stamp, m.start, m.limit, m.by)
	if errors.Is(err, segment.ErrExhausted) {
		return head + a.spent(m), 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	return head + a.periodMoved(m, from, to), to - from, nil
}

// spent is the rest of the line of a period whose counter is at its last
// number already.
func (a Advance) spent(m move) string {
	return fmt.Sprintf("max_id at its last number, %d, already: nothing to move%s", m.limit, a.dry())
}

// periodMoved is the rest of a period's line: the move, and why it is
// short when it was clamped at the period's last number.
func (a Advance) periodMoved(m move, from, to int64) string {
	s := fmt.Sprintf("max_id %d → %d", from, to)
	if to-from < m.by {
		s += fmt.Sprintf(", clamped at %d, the period's last number: its numbers are spent, which is safe "+
			"(the tag answers period_exhausted until the next period)", m.limit)
	}
	return s + a.dry()
}

// periodOf names one counter.
type periodOf struct {
	tag   string
	stamp int64
}

// countersOf reads p's counters for a dry run.
func countersOf(ctx context.Context, p Periods) (map[periodOf]int64, error) {
	list, err := p.PeriodCounters(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[periodOf]int64, len(list))
	for _, c := range list {
		m[periodOf{c.AppTag, c.Stamp}] = c.MaxID
	}
	return m, nil
}
