package cmd

import (
	"context"
	"fmt"

	"github.com/idalloc/idalloc/segment"
)

// regionSource is the part of a source migrateRegion reads.
type regionSource interface {
	RegionRecord(ctx context.Context) (segment.Region, bool, error)
}

// migrateRegion carries the region the source serves (API.md §13) to the
// target, before anything else: a database serves one region for good,
// since its max_id has counted that region's numbers, so a target that
// records another is refused with ErrRegionMismatch, nothing copied. want,
// when not nil, is the region the flags give (a Tinyid source's delta and
// remainder), recorded in the source's stead. A source of a single region
// records nothing, and its tags go into any target: their max_id only
// ever rises there.
func migrateRegion(ctx context.Context, from regionSource, to segment.RegionStore, want *segment.Region, report func(string)) error {
	var r segment.Region
	if want != nil {
		r = want.Normal()
	} else {
		rec, ok, err := from.RegionRecord(ctx)
		if err != nil {
			return fmt.Errorf("read source: %w", err)
		}
		if !ok {
			return nil
		}
		r = rec.Normal()
	}
	if r.Single() {
		return nil
	}
	have, err := to.RecordRegion(ctx, r)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if have.Normal() != r {
		return fmt.Errorf("%w: the target database is %s, the source's IDs are %s's: a database serves one region "+
			"for good, so migrate into a database of %s, or a new one", segment.ErrRegionMismatch, have, r, r)
	}
	report(fmt.Sprintf("region: the target serves %s, as the source does", r))
	return nil
}
