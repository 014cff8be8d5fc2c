package segment

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Regions (docs/api.md §13) are sites that share no database. Each has its own
// store, and a tag's IDs in region ID of Count are the numbers ≡ ID (mod
// Count), Tinyid's delta and remainder: Count databases never issue the
// same ID, whatever each is cut off from, and the IDs of all regions stay
// roughly increasing together, since every store's max_id counts the same
// numbers.
//
// A store's max_id stays a number like any other: a fetch in a region
// reserves step·Count numbers, (old, old+step·Count], of which exactly
// step are ≡ ID, and the region serves those. The allocator counts them
// in an index space, index k being the number k·Count + ID, so that its
// spans, claims and batches work on consecutive indexes as in a single
// region (where the index is the number) and the mapping is one
// multiply-add as an ID is issued.
//
// Formats: sequential and fixed_length IDs are those numbers, ≡ ID (a
// fixed_length tag's last one is the largest ≡ ID below 10^length). A
// scrambled tag permutes them, so its IDs are not ≡ ID; they are unique
// across regions only when every region's row holds the same key, since
// the permutation is then one bijection fed each region's own numbers. A
// key is made at create and never leaves its database, so a scrambled tag
// cannot be created in one region of several (each region's would have a
// key of its own, and two regions could issue the same ID); one made
// before the regions split, its row copied with its key to every region's
// database, is served. Dated tags count per period, which regions do not
// split: a dated tag is refused at create and not served in an instance
// of more than one region. Nor are a region's IDs runs of consecutive
// numbers: ranges (NextRanges) are refused, and NextRun's run holds every
// Count-th number.

// MaxRegions is the most regions a deployment may have.
const MaxRegions = 1024

// Region is where an instance serves: region ID of Count. The zero Region
// is the single region of a deployment without regions (Count 1, ID 0).
type Region struct {
	// Count is how many regions there are, R; 0 means 1.
	Count int64
	// ID is this one, r: 0 ≤ ID < Count.
	ID int64
}

// errRegionCount and errRegionID refuse a Region, naming the config key.
var (
	errRegionCount = invalid("region.count", "must be from 1 to "+strconv.Itoa(MaxRegions), nil)
	errRegionID    = invalid("region.id", "must be from 0 to region.count − 1", nil)
)

// Check refuses a Count outside 1..MaxRegions (0 is 1) or an ID outside
// 0..Count−1, with an *errs.Error whose Field is the config key at fault
// (region.count, region.id).
func (r Region) Check() error {
	switch {
	case r.Count < 0 || r.Count > MaxRegions:
		return errRegionCount
	case r.ID < 0 || r.ID >= r.count():
		return errRegionID
	}
	return nil
}

// count is Count with 0 read as 1.
func (r Region) count() int64 { return max(r.Count, 1) }

// Single reports whether r is the one region of a deployment without
// regions, whose IDs are every number.
func (r Region) Single() bool { return r.count() == 1 }

// Normal is r with Count 0 written as 1, as a record holds it.
func (r Region) Normal() Region { return Region{Count: r.count(), ID: r.ID} }

// String is "region 1 of 2", or "a single region".
func (r Region) String() string {
	if r.Single() {
		return "a single region"
	}
	return fmt.Sprintf("region %d of %d", r.ID, r.count())
}

// number is the number of index k, k·Count + ID.
func (r Region) number(k int64) int64 { return k*r.count() + r.ID }

// index is the index of the smallest number ≡ ID at or above n.
func (r Region) index(n int64) int64 {
	c := r.count()
	d := n - r.ID
	q := d / c
	if d%c > 0 {
		q++ // rounded up; Go's division rounds toward zero
	}
	return q
}

// indexBelow is the index of the largest number ≡ ID at or below n.
func (r Region) indexBelow(n int64) int64 {
	c := r.count()
	d := n - r.ID
	q := d / c
	if d%c < 0 {
		q-- // rounded down
	}
	return q
}

// last is the largest number ≡ ID at or below n: a format's last number
// in this region.
func (r Region) last(n int64) int64 { return r.number(r.indexBelow(n)) }

// delta is how far a fetch of step IDs of the region moves max_id,
// step·Count, capped where it would pass int64 (the store then finds the
// tag spent). 0 stays 0: the row's own step, in a single region.
func (r Region) delta(step int64) int64 {
	c := r.count()
	if step > (1<<63-1)/c {
		return (1<<63 - 1) / c * c
	}
	return step * c
}

// ErrRegionMismatch: the store records another region than the instance's
// configuration says. A database serves one region for good, since its
// max_id has counted that region's numbers; an instance of another would
// issue numbers of its residue that the region's own database issues too.
var ErrRegionMismatch = errors.New("the region configured differs from the one the database records")

// ErrIssuedAsSingle: a database that records no region, and whose tags
// have issued IDs, is asked to serve one region of several. Its max_id
// has counted every number, the other regions' residues among them, and
// the other regions' databases do not know it: a new one would issue
// those numbers again. The way there is a copy of it in each region's
// database (idalloc migrate -region-count -region-id), each then above
// everything it issued.
var ErrIssuedAsSingle = errors.New("this database issued IDs as a single region")

// RegionStore is what a store provides to record the region it serves:
// one record per database, written once by the first instance of a
// region (compare-and-set: an insert that only one caller wins) and never
// changed after.
type RegionStore interface {
	// RegionRecord returns the recorded region, and false when none is
	// (a database of a single region, or one made before the record
	// existed). Errors are faults.
	RegionRecord(ctx context.Context) (Region, bool, error)
	// RecordRegion records r unless a region is recorded already, in one
	// statement only one caller can win, and returns the region recorded
	// after it: r, or the one that was there. Errors are faults (a store
	// without the record's table names its fix).
	RecordRegion(ctx context.Context, r Region) (Region, error)
	// IssuedTag returns a tag whose IDs the store has issued: its
	// high-water mark above its start − 1, or, for a dated tag, a period
	// counter above it; false when no tag has issued any (a new database,
	// or one whose tags were created and not yet used). Errors are faults.
	IssuedTag(ctx context.Context) (string, bool, error)
}

// CheckRegion holds the instance configured as want to the region its
// store serves, before it serves anything: a store without a record and a
// single-region instance stay as they are (nothing is recorded, so a
// deployment without regions never meets the record); a store without a
// record and an instance of several regions records want, the first such
// instance's winning, unless a tag of the store has issued IDs, which is
// refused with ErrIssuedAsSingle naming the tag and the way to regions,
// nothing recorded; a record that differs from want, count or ID, or a
// record of several regions and a single-region instance, is refused with
// ErrRegionMismatch in one line naming both. Other errors are the
// store's faults.
func CheckRegion(ctx context.Context, st RegionStore, want Region) error {
	if err := want.Check(); err != nil {
		return err
	}
	want = want.Normal()
	have, ok, err := st.RegionRecord(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("read the database's region: %w", err)
	case !ok && want.Single():
		return nil
	case !ok:
		tag, issued, err := st.IssuedTag(ctx)
		if err != nil {
			return fmt.Errorf("read the database's tags: %w", err)
		}
		if issued {
			return issuedAsSingle(tag, want)
		}
		if have, err = st.RecordRegion(ctx, want); err != nil {
			return fmt.Errorf("record the database's region: %w", err)
		}
	}
	return sameRegion(have, want)
}

// issuedAsSingle refuses want, an instance of several regions, on a
// database without a record whose tag has issued IDs: one line naming the
// tag and the way to regions.
func issuedAsSingle(tag string, want Region) error {
	return fmt.Errorf("%w (tag %q among them) and records no region, so it cannot become %s in place: "+
		"another region's database would issue the same numbers again. Stop its instances and copy it into "+
		"each region's database with idalloc migrate -to-dsn <that database> -region-count %d -region-id <its id>, "+
		"then point dsn at this region's copy (README: From one database to regions); or configure no region",
		ErrIssuedAsSingle, tag, want, want.count())
}

// sameRegion refuses want, the instance's region, unless it is have, the
// database's: one line naming both, and the way out.
func sameRegion(have, want Region) error {
	if have.Normal() == want.Normal() {
		return nil
	}
	return fmt.Errorf("%w: this database is %s; this instance is configured as %s (region.count, region.id): "+
		"a database serves one region for good, so correct region.count and region.id, or point dsn at the "+
		"database of the region configured", ErrRegionMismatch, have, want)
}

// errDatedRegions refuses a dated tag in an instance of several regions.
var errDatedRegions = invalid("format", "dated tags are not served across regions (region.count above 1): "+
	"their numbers restart each period in one counter per period, which regions do not split; "+
	"use sequential or fixed_length, whose IDs each region serves by its residue", ErrInvalidFormat)

// errScrambledRegions refuses to create a scrambled tag in an instance of
// several regions.
var errScrambledRegions = invalid("format", "a scrambled tag cannot be created in one region of several "+
	"(region.count above 1): its key is made at create and never leaves this region's database, so each "+
	"region's tag would permute with a key of its own and two regions could issue the same ID; create it "+
	"before the regions split and copy its row, key and all, to every region's database (idalloc migrate), "+
	"or use sequential or fixed_length", ErrInvalidFormat)

// Region returns the region the allocator serves (Config.Region, Count 0
// written as 1).
func (a *Allocator) Region() Region { return a.region }
