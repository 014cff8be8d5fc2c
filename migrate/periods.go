package migrate

import (
	"context"
	"fmt"

	"github.com/idalloc/idalloc/store"
)

// periodSource is the part of a source migratePeriods reads: a dated
// tag's counters, one per period. Leaf's has none (no segment_periods).
type periodSource interface {
	Periods(ctx context.Context) ([]store.PeriodCounter, error)
}

// periodTarget is the part of a target migratePeriods writes.
type periodTarget interface {
	periodSource
	RaisePeriod(ctx context.Context, pc store.PeriodCounter) error
}

// refusedPeriodsError reports the source's period counters that were not
// migrated, each listed in the report with the reason.
type refusedPeriodsError struct{ refused, total int }

func (e refusedPeriodsError) Error() string {
	return fmt.Sprintf("%d of %d period counters not migrated (listed above, each with the reason); every other was", e.refused, e.total)
}

// migratePeriods carries the counter of every period of every tag in
// carried: on the target each is raised to at least the source's, never
// lowered, and made where missing, so that a dated tag's numbers of a
// period continue above what the source issued of it. A counter whose tag
// was not carried is listed and left: the target's tag of that name, if
// any, is another tag. It returns a refusedPeriodsError if any was left
// but for those of the tags of skip, which are listed as left out.
func migratePeriods(ctx context.Context, from periodSource, to periodTarget, carried map[string]bool, skip skipSet, report func(string)) error {
	src, err := from.Periods(ctx)
	if err != nil {
		return fmt.Errorf("read source period counters: %w", err)
	}
	if len(src) == 0 {
		// A target without segment_periods takes a source without any.
		return nil
	}
	dst, err := to.Periods(ctx)
	if err != nil {
		return fmt.Errorf("read target period counters: %w", err)
	}
	type key struct {
		tag   string
		stamp int64
	}
	have := make(map[key]int64, len(dst))
	for _, c := range dst {
		have[key{c.AppTag, c.Stamp}] = c.MaxID
	}
	refused := 0
	for _, c := range src {
		if skip[c.AppTag] {
			report(fmt.Sprintf("tag %q period %d: left out with its tag (-skip-tags)", c.AppTag, c.Stamp))
			continue
		}
		if !carried[c.AppTag] {
			// %q: the name is the source's, and may be no valid tag.
			report(fmt.Sprintf("tag %q period %d: NOT MIGRATED: its tag was not", c.AppTag, c.Stamp))
			refused++
			continue
		}
		head := fmt.Sprintf("tag %s period %d: ", c.AppTag, c.Stamp)
		cur, ok := have[key{c.AppTag, c.Stamp}]
		if ok && cur >= c.MaxID {
			report(head + fmt.Sprintf("target max_id %d already >= %d", cur, c.MaxID))
			continue
		}
		if err := to.RaisePeriod(ctx, c); err != nil {
			return fmt.Errorf("migrate %q period %d: %w", c.AppTag, c.Stamp, err)
		}
		if ok {
			report(head + fmt.Sprintf("max_id raised from %d to at least %d", cur, c.MaxID))
		} else {
			report(head + fmt.Sprintf("created, max_id %d", c.MaxID))
		}
	}
	if refused > 0 {
		return refusedPeriodsError{refused: refused, total: len(src)}
	}
	return nil
}
