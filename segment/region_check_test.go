package segment_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// TestRegionCheck: a Region's count and ID are held to their ranges, each
// refusal naming the config key at fault.
func TestRegionCheck(t *testing.T) {
	cases := []struct {
		r     segment.Region
		field string // "" when valid
	}{
		{segment.Region{}, ""},
		{regionOf(1, 0), ""},
		{regionOf(2, 1), ""},
		{regionOf(segment.MaxRegions, segment.MaxRegions-1), ""},
		{regionOf(-1, 0), "region.count"},
		{regionOf(segment.MaxRegions+1, 0), "region.count"},
		{regionOf(2, 2), "region.id"},
		{regionOf(2, -1), "region.id"},
		{regionOf(0, 1), "region.id"},
	}
	for _, c := range cases {
		err := c.r.Check()
		e, _ := errs.Describe(err)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v, want valid", c.r, err)
		case c.field != "" && (e == nil || e.Field != c.field):
			t.Errorf("%+v: %v, want a refusal naming %s", c.r, err, c.field)
		}
		if c.field != "" {
			if _, err := segment.New(context.Background(), newFakeStore(), segment.Config{Region: c.r}); !errors.Is(err, segment.ErrInvalidConfig) {
				t.Errorf("New with %+v: %v, want ErrInvalidConfig", c.r, err)
			}
		}
	}
}

// regionRecord is a segment.RegionStore in memory; race, when set, is
// recorded by "another instance" just before RecordRegion's insert;
// issued, when set, is a tag that has issued IDs.
type regionRecord struct {
	have     *segment.Region
	race     *segment.Region
	issued   string
	recorded int // RecordRegion calls
}

func (s *regionRecord) IssuedTag(context.Context) (string, bool, error) {
	return s.issued, s.issued != "", nil
}

func (s *regionRecord) RegionRecord(context.Context) (segment.Region, bool, error) {
	if s.have == nil {
		return segment.Region{}, false, nil
	}
	return *s.have, true, nil
}

func (s *regionRecord) RecordRegion(_ context.Context, r segment.Region) (segment.Region, error) {
	s.recorded++
	if s.race != nil && s.have == nil {
		s.have = s.race
	}
	if s.have == nil {
		s.have = &r
	}
	return *s.have, nil
}

// TestCheckRegion: the rule an instance's start holds its store to.
func TestCheckRegion(t *testing.T) {
	r21, r20, r31 := regionOf(2, 1), regionOf(2, 0), regionOf(3, 1)
	cases := []struct {
		name       string
		have, race *segment.Region
		issued     string
		want       segment.Region
		refused    []string // words of the refusal; nil when allowed
		sentinel   error    // of the refusal: ErrRegionMismatch unless set
		record     *segment.Region
	}{
		{name: "no record, one region: nothing recorded", want: segment.Region{}},
		{name: "no record, several: recorded", want: r21, record: &r21},
		{name: "the same record", have: &r21, want: r21, record: &r21},
		{name: "another id", have: &r21, want: r20, record: &r21,
			refused: []string{"this database is region 1 of 2", "this instance is configured as region 0 of 2 (region.count, region.id)"}},
		{name: "another count", have: &r21, want: r31, record: &r21,
			refused: []string{"this database is region 1 of 2", "configured as region 1 of 3"}},
		{name: "one region on a recorded database", have: &r21, want: segment.Region{}, record: &r21,
			refused: []string{"this database is region 1 of 2", "configured as a single region"}},
		{name: "another instance recorded first", race: &r20, want: r21, record: &r20,
			refused: []string{"this database is region 0 of 2", "configured as region 1 of 2"}},
		{name: "no record, issued IDs, one region: as before", issued: "order", want: segment.Region{}},
		{name: "no record, issued IDs, several: refused, nothing recorded", issued: "order", want: r21,
			sentinel: segment.ErrIssuedAsSingle, refused: []string{`(tag "order" among them) and records no region`,
				"cannot become region 1 of 2 in place", "idalloc migrate", "-region-count 2 -region-id <its id>"}},
		{name: "recorded, issued IDs: served", have: &r21, issued: "order", want: r21, record: &r21},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &regionRecord{have: c.have, race: c.race, issued: c.issued}
			err := segment.CheckRegion(context.Background(), st, c.want)
			if c.refused == nil && err != nil {
				t.Fatalf("CheckRegion = %v, want nil", err)
			}
			if c.refused != nil {
				sentinel := segment.ErrRegionMismatch
				if c.sentinel != nil {
					sentinel = c.sentinel
				}
				if !errors.Is(err, sentinel) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("CheckRegion = %v, want one line of %v", err, sentinel)
				}
				for _, w := range c.refused {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("refusal %q does not say %q", err, w)
					}
				}
			}
			if (c.record == nil) != (st.have == nil) || c.record != nil && *st.have != *c.record {
				t.Errorf("record = %v, want %v", st.have, c.record)
			}
			if c.want.Single() && c.have == nil && st.recorded != 0 {
				t.Errorf("a single region wrote a record")
			}
		})
	}
	if err := segment.CheckRegion(context.Background(), &regionRecord{}, regionOf(2, 5)); errs.KindOf(err) != errs.BadRequest {
		t.Errorf("CheckRegion of an invalid region = %v, want its refusal", err)
	}
}
