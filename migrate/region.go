package migrate

import (
	"context"
	"fmt"

	"github.com/idalloc/idalloc/segment"
)

// regionSource is the part of a source migrateRegion reads.
type regionSource interface {
	RegionRecord(ctx context.Context) (segment.Region, bool, error)
}

// migrateRegion carries the region the source serves (docs/api.md §13) to the
// target, before anything else: a database serves one region for good,
// since its max_id has counted that region's numbers, so a target that
// records another is refused with ErrRegionMismatch, nothing copied. want,
// when not nil, is the region the flags give, recorded in the source's
// stead: a source that records another is refused. A source of a single
// region records nothing, and its tags go into any target: their max_id
// only ever rises there. A target that records no region is made one only
// if its own tags have issued nothing (segment.ErrIssuedAsSingle).
func migrateRegion(ctx context.Context, from regionSource, to segment.RegionStore, want *segment.Region, report func(string)) error {
	rec, recorded, err := from.RegionRecord(ctx)
	if err != nil {
		return fmt.Errorf("read source: %w", err)
	}
	r := rec.Normal()
	if want != nil {
		if recorded && r != want.Normal() {
			return fmt.Errorf("%w: the source database is %s, and -region-count %d -region-id %d say %s: a database "+
				"serves one region for good, so its copies are %s too", segment.ErrRegionMismatch, r, want.Count, want.ID, want.Normal(), r)
		}
		r = want.Normal()
	}
	if r.Single() {
		return nil
	}
	have, ok, err := to.RegionRecord(ctx)
	if err == nil && !ok {
		var tag string
		var issued bool
		if tag, issued, err = to.IssuedTag(ctx); err == nil && issued {
			return fmt.Errorf("target: %w (tag %q among them) and records no region, so it cannot become %s: "+
				"migrate into a new database for it", segment.ErrIssuedAsSingle, tag, r)
		}
		if err == nil {
			have, err = to.RecordRegion(ctx, r)
		}
	}
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if have.Normal() != r {
		return fmt.Errorf("%w: the target database is %s, the source's IDs are %s's: a database serves one region "+
			"for good, so migrate into a database of %s, or a new one", segment.ErrRegionMismatch, have, r, r)
	}
	how := "as the source does"
	if !recorded {
		how = "as -region-count and -region-id say"
	}
	report(fmt.Sprintf("region: the target serves %s, %s", r, how))
	return nil
}
