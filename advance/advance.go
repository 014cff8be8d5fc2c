// Package advance is the runbook step after a restore or a failover
// (docs/api.md §3, "A store that forgets"): a database restored from a backup or
// failed over to an asynchronous replica, or a Redis or etcd rebuilt, has
// forgotten its last writes, so instances started afterwards would be
// handed ranges and worker IDs that the lost writes gave out already.
// Advance moves every tag's max_id past what the lost fetches could have
// reserved, the counters of dated tags' current periods likewise
// (dated.go), and every worker lease's last_timestamp_ms past any
// timestamp a forgotten holder could have used, each by a compare-and-set
// that never lowers it.
//
// The package imports the domain only: the stores come in through the
// small interfaces Segments and Leases, which package store, redislease
// and etcdlease implement, proven by the suite internal/advancetest. The
// command that opens them, `idalloc advance`, is package migrate's.
package advance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// Segments is a store whose tags Advance moves (package store's). Its
// dated tags' counters move only if it is Periods too (package store's
// through package migrate's adapter).
type Segments interface {
	// Tags lists every row, ordered by app_tag.
	Tags(ctx context.Context) ([]segment.Tag, error)
	// AdvanceTag moves tag's max_id forward by by with a compare-and-set
	// on the value read, read again after a lost race, and returns the
	// max_id it moved from and to.
	AdvanceTag(ctx context.Context, tag string, by int64) (from, to int64, err error)
}

// Leases is a lease store whose worker IDs Advance raises (package
// store's, redislease's, etcdlease's).
type Leases interface {
	// AdvanceLeases raises every worker ID's last_timestamp_ms, in every
	// cluster, to at least toMS, each by a compare-and-set that never
	// lowers it, and calls each with the value before and after; with
	// dryRun it writes nothing.
	AdvanceLeases(ctx context.Context, toMS int64, dryRun bool, each func(cluster string, workerID, fromMS, toMS int64)) error
}

// Advance is one run of idalloc advance. Run checks it first; a refusal
// changes nothing.
type Advance struct {
	// Segments moves the tags' max_id.
	Segments bool
	// By moves each tag's max_id by this many. 0 sizes each move by
	// Estimate instead; exactly one of By and Estimate.For is set.
	By int64
	// Estimate sizes each tag's move when By is 0.
	Estimate Estimate
	// Tags limits the move to these tags; nil means every tag.
	Tags []string
	// Region is the region the store serves (docs/api.md §13), the zero
	// Region for none: in region ID of Count, By and the estimate count
	// the region's IDs, each of which is every Count-th number, so a
	// tag's max_id moves by Count times as much.
	Region segment.Region
	// MaxClockSkew is the instances' dated.max_clock_skew, the bound of
	// their clocks and of this machine's by the store's, which the
	// periods of dated tags are chosen by; 0 means
	// segment.DefaultMaxClockSkew.
	MaxClockSkew time.Duration

	// Leases moves the worker leases' last_timestamp_ms.
	Leases bool
	// LeaseFor moves each worker ID's last_timestamp_ms to at least now +
	// LeaseFor. 0 means Estimate.For, and never less than LeaseMin.
	LeaseFor time.Duration
	// LeaseMin is the least LeaseFor may be: the instances' lease TTL plus
	// snowflake.max_drift_error, the longest a holder whose record the
	// store forgot may go on issuing IDs before it has fenced itself. A
	// new holder of its worker ID must start after that.
	LeaseMin time.Duration

	// DryRun reads and reports, and writes nothing.
	DryRun bool
	// Now is the clock LeaseFor counts from and dated tags' periods are
	// read from; nil means time.Now.
	Now func() time.Time
	// Report receives each line of output; nil discards them.
	Report func(line string)
}

// tally is what Run moved (or, in a dry run, would have moved).
type tally struct {
	Tags    int   // tags moved
	Periods int   // periods of dated tags moved, among them
	IDs     int64 // the sum of their moves
	Leases  int   // worker IDs seen
	Raised  int   // worker IDs raised (the others were past the floor)
	ToMS    int64 // the leases' floor
}

// Check refuses what Run cannot do: nothing to move, -by and -for
// together or neither, a negative or zero count or duration, an invalid
// tag name, a LeaseFor below LeaseMin.
func (a Advance) Check() error {
	if !a.Segments && !a.Leases {
		return errors.New("nothing to advance: neither tags nor leases")
	}
	if a.Segments {
		switch {
		case a.By < 0:
			return fmt.Errorf("-by %d is negative", a.By)
		case a.By > 0 && a.Estimate.For != 0:
			return errors.New("-by and -for both given: give one")
		case a.By == 0 && a.Estimate.For == 0:
			return errors.New("give -by COUNT or -for DURATION: how far to move each tag")
		case a.By == 0:
			if err := a.Estimate.check(); err != nil {
				return err
			}
		}
		for _, t := range a.Tags {
			if !segment.ValidTag(t) {
				return fmt.Errorf("-tags: %q is not a tag name (^[A-Za-z0-9_.:-]{1,64}$)", t)
			}
		}
	}
	if a.Leases {
		switch {
		case a.LeaseFor < 0:
			return fmt.Errorf("-lease-for %s is negative", a.LeaseFor)
		case a.leaseFor() <= 0:
			return errors.New("give -lease-for or -for: how far past now the leases move")
		case a.LeaseFor > 0 && a.LeaseFor < a.LeaseMin:
			return fmt.Errorf("-lease-for %s is below %s, snowflake.lease_ttl + snowflake.max_drift_error: "+
				"a holder the store forgot may issue IDs that long", a.LeaseFor, a.LeaseMin)
		}
	}
	return nil
}

// leaseFor is how far past now the leases move.
func (a Advance) leaseFor() time.Duration {
	if a.LeaseFor > 0 {
		return a.LeaseFor
	}
	return max(a.Estimate.For, a.LeaseMin)
}

// move is one tag's planned move, or one period's of a dated tag.
type move struct {
	tag   string
	maxID int64 // as read; not for a period
	by    int64

	period              bool
	stamp, start, limit int64 // a period's: dated's stamp, first and last number
}

// Run checks a, then moves the tags in segs and raises the leases in
// leases (either nil when a leaves it), reporting one line per tag (per
// period, for a dated tag) and per worker ID and a summary. Every tag is
// checked before the first moves: an unknown tag, a move that would pass
// a tag's last number (a fixed_length or scrambled tag's digits; a dated
// period's move is clamped there instead), or dated tags with this
// machine's clock off the store's, is refused with nothing changed. A
// store failing midway leaves what moved moved (each line printed says
// what); running again is safe, it only moves further.
func (a Advance) Run(ctx context.Context, segs Segments, leases Leases) error {
	if err := a.Check(); err != nil {
		return err
	}
	if a.Segments && segs == nil || a.Leases && leases == nil {
		return errors.New("advance: no store to move")
	}
	var sum tally
	var p plan
	if a.Segments {
		var err error
		if p, err = a.plan(ctx, segs); err != nil {
			return err
		}
		if a.By == 0 {
			a.say(a.Estimate.String())
			if p.dated != "" {
				a.say(a.Estimate.DatedString())
			}
		}
		if r := a.Region.Normal(); !r.Single() {
			a.say(fmt.Sprintf("%s: each tag's max_id moves by %d × the count, the region's IDs being one number in %d",
				r, r.Count, r.Count))
		}
		if p.dated != "" {
			a.say(p.dated)
		}
		for _, n := range p.notes {
			a.say(n)
		}
	}
	var counters map[periodOf]int64
	if a.DryRun && p.dated != "" {
		var err error
		if counters, err = countersOf(ctx, p.periods); err != nil {
			return err
		}
	}
	for i, m := range p.moves {
		line, moved, err := a.apply(ctx, segs, p.periods, m, counters)
		if err != nil {
			a.say(a.summary(sum))
			return err
		}
		if i == 0 || p.moves[i-1].tag != m.tag {
			sum.Tags++
		}
		if m.period {
			sum.Periods++
		}
		sum.IDs += moved
		a.say(line)
	}
	if a.Leases {
		sum.ToMS = a.now().Add(a.leaseFor()).UnixMilli()
		err := leases.AdvanceLeases(ctx, sum.ToMS, a.DryRun, func(cluster string, workerID, fromMS, toMS int64) {
			sum.Leases++
			line := fmt.Sprintf("lease cluster %s worker %d: last_timestamp_ms ", cluster, workerID)
			if toMS > fromMS {
				sum.Raised++
				line += fmt.Sprintf("%d → %d", fromMS, toMS)
			} else {
				line += fmt.Sprintf("%d, already at or past %d", fromMS, sum.ToMS)
			}
			a.say(line + a.dry())
		})
		if err != nil {
			a.say(a.summary(sum))
			return err
		}
	}
	a.say(a.summary(sum))
	return nil
}

// apply makes move m (or, in a dry run, reports it from what was read)
// and returns its line of output and how many IDs it moved.
func (a Advance) apply(ctx context.Context, segs Segments, periods Periods, m move, counters map[periodOf]int64) (string, int64, error) {
	if m.period {
		return a.movePeriod(ctx, periods, m, counters)
	}
	from, to := m.maxID, m.maxID+m.by
	if !a.DryRun {
		var err error
		if from, to, err = segs.AdvanceTag(ctx, m.tag, m.by); err != nil {
			return "", 0, err
		}
	}
	// Counted in the region's IDs, one number in Count.
	return fmt.Sprintf("tag %s: max_id %d → %d%s", shown(m.tag), from, to, a.dry()), (to - from) / a.Region.Normal().Count, nil
}

// now reads a's clock.
func (a Advance) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// plan is what Run moves: the moves in order, by tag; for dated tags, the
// line saying which periods and why (empty when none is moved), the notes
// of periods left out, and the store's counters they move in.
type plan struct {
	moves   []move
	dated   string
	notes   []string
	periods Periods
}

// plan reads the tags and sizes each move, refusing unknown tags and moves
// past a tag's last number, all of them at once; with dated tags among
// them, also this machine's clock if the store's disagrees.
func (a Advance) plan(ctx context.Context, segs Segments) (plan, error) {
	rows, err := segs.Tags(ctx)
	if err != nil {
		return plan{}, err
	}
	named, found := map[string]bool{}, map[string]bool{}
	for _, t := range a.Tags {
		named[t] = true
	}
	var p plan
	var refused []error
	now := a.now()
	for _, r := range rows {
		if len(named) > 0 && !named[r.AppTag] {
			continue
		}
		found[r.AppTag] = true
		if r.Format == segment.FormatDated {
			moves, note, err := a.planDated(r, now)
			if err != nil {
				refused = append(refused, fmt.Errorf("tag %q: %w", r.AppTag, err))
				continue
			}
			p.moves = append(p.moves, moves...)
			if note != "" {
				p.notes = append(p.notes, note)
			}
			continue
		}
		by := a.By
		if by == 0 {
			if by, err = a.Estimate.By(r.Step); err != nil {
				refused = append(refused, fmt.Errorf("tag %q: %w", r.AppTag, err))
				continue
			}
		}
		by, ok := mul(by, a.Region.Normal().Count)
		if !ok {
			refused = append(refused, fmt.Errorf("tag %q: %d IDs of %s pass the largest max_id: give a smaller -by",
				r.AppTag, a.By, a.Region))
			continue
		}
		last, err := segment.LastNumber(r)
		switch {
		case err != nil:
			refused = append(refused, fmt.Errorf("tag %q: its row holds no format idalloc serves: %w", r.AppTag, err))
			continue
		case r.MaxID > last-by:
			refused = append(refused, fmt.Errorf("tag %q: max_id %d + %d passes %d, the last number of its format %s: "+
				"leave it out of -tags, or give a smaller -by", r.AppTag, r.MaxID, by, last, formatName(r)))
			continue
		}
		p.moves = append(p.moves, move{tag: r.AppTag, maxID: r.MaxID, by: by})
	}
	for _, t := range a.Tags {
		if !found[t] {
			refused = append(refused, fmt.Errorf("-tags: no tag %q in the store", t))
			found[t] = true // named twice, refused once
		}
	}
	if len(refused) > 0 {
		return plan{}, fmt.Errorf("nothing moved: %w", errors.Join(refused...))
	}
	if i := slices.IndexFunc(p.moves, func(m move) bool { return m.period }); i >= 0 {
		var ok bool
		if p.periods, ok = segs.(Periods); !ok {
			return plan{}, fmt.Errorf("nothing moved: tag %q is dated, and this store's period counters cannot be moved: "+
				"leave it out of -tags", p.moves[i].tag)
		}
		skew, err := a.checkClock(ctx, p.periods)
		if err != nil {
			return plan{}, err
		}
		from, to := a.window(now)
		p.dated = fmt.Sprintf("dated tags: the counters of each one's previous period and of every period meeting %s to %s move "+
			"(this machine's clock, %v from the store's; max_clock_skew %v)", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339),
			skew.Round(time.Millisecond), a.clockBound())
	}
	return p, nil
}
