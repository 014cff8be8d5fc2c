package segment_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// TestCheckNewTagDated pins a dated tag's defaults, what is stored of it
// (Length, Start, FormatSpec), and every refusal: kind bad_request naming
// the field, in the order app_tag, step, format, the dated fields,
// length, start.
func TestCheckNewTagDated(t *testing.T) {
	const d = segment.FormatDated
	tests := []struct {
		name  string
		tag   segment.NewTag
		want  segment.Tag // AppTag, Step, Format, Length, Start, FormatSpec when valid
		field string      // when refused
		is    error
		words string
	}{
		{"defaults", segment.NewTag{Format: d},
			segment.Tag{Step: 1000, Format: d, Length: 6, Start: 1, FormatSpec: "v1;period=day;time_zone=UTC;prefix=;separator="}, "", nil, ""},
		{"every setting", segment.NewTag{Format: d, Step: 50, Period: dated.Minute, TimeZone: "Asia/Shanghai", Length: 4, Start: new(int64(10)),
			Prefix: "ORD", Separator: "-"},
			segment.Tag{Step: 50, Format: d, Length: 4, Start: 10, FormatSpec: "v1;period=minute;time_zone=Asia/Shanghai;prefix=ORD;separator=-"}, "", nil, ""},
		{"year takes 14 digits", segment.NewTag{Format: d, Period: dated.Year, Length: 14},
			segment.Tag{Step: 1000, Format: d, Length: 14, Start: 1, FormatSpec: "v1;period=year;time_zone=UTC;prefix=;separator="}, "", nil, ""},

		{"unknown period", segment.NewTag{Format: d, Period: "week"}, segment.Tag{}, "period", dated.ErrInvalidPeriod, "year, month, day, hour or minute"},
		{"unknown zone", segment.NewTag{Format: d, TimeZone: "Mars/Olympus_Mons"}, segment.Tag{}, "time_zone", dated.ErrInvalidTimeZone, "IANA name"},
		{"Local zone", segment.NewTag{Format: d, TimeZone: "Local"}, segment.Tag{}, "time_zone", dated.ErrInvalidTimeZone, "Local is each machine's own zone"},
		{"prefix with a space", segment.NewTag{Format: d, Prefix: "OR D"}, segment.Tag{}, "prefix", dated.ErrInvalidPrefix, "has a space"},
		{"separator of another kind", segment.NewTag{Format: d, Separator: "#"}, segment.Tag{}, "separator", dated.ErrInvalidSeparator, `"-", "_", "/", "."`},
		{"stamp + length over 18", segment.NewTag{Format: d, Period: dated.Minute, Length: 7}, segment.Tag{}, "length", dated.ErrInvalidLength, "from 1 to 6 for period minute"},
		{"start beyond the length", segment.NewTag{Format: d, Length: 2, Start: new(int64(100))}, segment.Tag{}, "start", dated.ErrInvalidStart, "from 1 to 99 for length 2"},
		{"start 0 given", segment.NewTag{Format: d, Start: new(int64(0))}, segment.Tag{}, "start", dated.ErrInvalidStart, "from 1 to 999999"},
		{"step over the cap", segment.NewTag{Format: d, Step: 5000}, segment.Tag{}, "step", segment.ErrInvalidStep, "from 1 to 2000"},
		{"period before length", segment.NewTag{Format: d, Period: "week", Length: 40}, segment.Tag{}, "period", dated.ErrInvalidPeriod, "year, month"},

		// A dated tag with scrambled options, and other formats with dated ones.
		{"scrambled with a period", segment.NewTag{Format: segment.FormatScrambled, Length: 8, Period: dated.Day}, segment.Tag{}, "period", segment.ErrDatedOnly, "setting of format dated only"},
		{"sequential with a zone", segment.NewTag{TimeZone: "UTC"}, segment.Tag{}, "time_zone", segment.ErrDatedOnly, "setting of format dated only"},
		{"fixed_length with a prefix", segment.NewTag{Format: segment.FormatFixedLength, Length: 6, Prefix: "A"}, segment.Tag{}, "prefix", segment.ErrDatedOnly, "send format dated"},
		{"sequential with a separator", segment.NewTag{Separator: "-"}, segment.Tag{}, "separator", segment.ErrDatedOnly, "setting of format dated only"},
		{"format before the dated fields", segment.NewTag{Format: "random", Period: dated.Day}, segment.Tag{}, "format", segment.ErrInvalidFormat, "scrambled or dated"},
		{"step 0 is dated's only", segment.NewTag{Format: segment.FormatSequential, Step: 0}, segment.Tag{}, "step", segment.ErrInvalidStep, "from 1 to 2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.tag
			n.AppTag = "t"
			if n.Step == 0 && n.Format != segment.FormatDated && tt.name != "step 0 is dated's only" {
				n.Step = 10
			}
			got, err := segment.CheckNewTag(n, 2000)
			if tt.field == "" {
				tt.want.AppTag = "t"
				if err != nil || got.AppTag != tt.want.AppTag || got.Step != tt.want.Step || got.Format != tt.want.Format ||
					got.Length != tt.want.Length || got.Start != tt.want.Start || got.FormatSpec != tt.want.FormatSpec {
					t.Errorf("CheckNewTag = %+v, %v; want %+v", got, err, tt.want)
				}
				if err := segment.CheckRow(got); err != nil {
					t.Errorf("CheckRow of what CheckNewTag made: %v", err)
				}
				return
			}
			e, ok := errs.Describe(err)
			if !ok || e.Kind != errs.BadRequest || e.Field != tt.field || !errors.Is(err, tt.is) || !strings.Contains(e.Error(), tt.words) {
				t.Errorf("CheckNewTag error = %v (field %q), want bad_request naming %q with %q (%v)", err, e.Field, tt.field, tt.words, tt.is)
			}
		})
	}
}

// TestDatedRows: what a dated row must hold to be served (CheckRow, as a
// migration reports it), and a row that holds it serves the same format
// on another allocator.
func TestDatedRows(t *testing.T) {
	spec := "v1;period=day;time_zone=Asia/Shanghai;prefix=ORD;separator=-"
	tests := []struct {
		name  string
		tag   segment.Tag
		field string // "" when valid
	}{
		{"dated", segment.Tag{AppTag: "ok", Step: 1, Start: 1, Format: segment.FormatDated, Length: 6, FormatSpec: spec}, ""},
		{"no spec", segment.Tag{AppTag: "ok", Step: 1, Start: 1, Format: segment.FormatDated, Length: 6}, "format_spec"},
		{"a spec of a newer idalloc", segment.Tag{AppTag: "ok", Step: 1, Start: 1, Format: segment.FormatDated, Length: 6, FormatSpec: "v2;x"}, "format_spec"},
		{"unknown zone in the spec", segment.Tag{AppTag: "ok", Step: 1, Start: 1, Format: segment.FormatDated, Length: 6,
			FormatSpec: "v1;period=day;time_zone=Nowhere/Land;prefix=;separator="}, "time_zone"},
		{"no length", segment.Tag{AppTag: "ok", Step: 1, Start: 1, Format: segment.FormatDated, FormatSpec: spec}, "length"},
		{"length over the period's", segment.Tag{AppTag: "ok", Step: 1, Start: 1, Format: segment.FormatDated, Length: 11, FormatSpec: spec}, "length"},
		{"start unknown", segment.Tag{AppTag: "ok", Step: 1, Format: segment.FormatDated, Length: 6, FormatSpec: spec}, "start"},
		{"a spec on a sequential tag", segment.Tag{AppTag: "ok", Step: 1, FormatSpec: spec}, "format_spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := segment.CheckRow(tt.tag)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckRow = %v", err)
				}
				return
			}
			if e, ok := errs.Describe(err); !ok || e.Field != tt.field || e.Kind != errs.BadRequest {
				t.Errorf("CheckRow = %v, want bad_request naming %q", err, tt.field)
			}
		})
	}

	// Created on one allocator, served in its format by another that
	// reads the row from the store.
	ctx := context.Background()
	clock := testclock.New(time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC))
	a, st := newDatedAllocator(t, clock, segment.NewTag{AppTag: "ord", Step: 10, TimeZone: "Asia/Shanghai", Prefix: "ORD", Separator: "-"}, segment.Config{})
	row := a.Tags()[0]
	if row.FormatSpec != spec || row.Length != 6 || row.Start != 1 || row.Format != segment.FormatDated {
		t.Errorf("Tags()[0] = %+v, want the spec %q, length 6, start 1", row, spec)
	}
	b := alloctest.New(t, st, segment.Config{Now: clock.Now})
	for i, want := range []string{"ORD-20261126-000001", "ORD-20261126-000011"} {
		al := []*segment.Allocator{a, b}[i]
		if got, err := al.NextText(ctx, "ord"); err != nil || got != want {
			t.Errorf("allocator %d: NextText = %q, %v; want %q", i, got, err, want)
		}
	}
}

// TestCreateDatedNeedsAPeriodStore: a store without per-period counters
// refuses dated tags in words that say so, and stores nothing; other
// formats are created there as ever.
func TestCreateDatedNeedsAPeriodStore(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{})
	_, err := a.CreateTag(ctx, segment.NewTag{AppTag: "d", Format: segment.FormatDated})
	e, ok := errs.Describe(err)
	if !errors.Is(err, segment.ErrFormatUnsupported) || !errors.Is(err, segment.ErrDatedUnsupported) || !ok ||
		e.Field != "format" || !strings.Contains(err.Error(), "cannot keep format dated: it has no per-period counters") {
		t.Errorf("CreateTag(dated) on a store without PeriodStore = %v, want ErrDatedUnsupported", err)
	}
	if tags, _ := st.Tags(ctx); len(tags) != 0 {
		t.Errorf("the store holds %v, want nothing", tags)
	}
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "s", Step: 5}); err != nil {
		t.Errorf("CreateTag(sequential) = %v", err)
	}

	// A dated row in such a store (put there by hand) is refused as a
	// fault, never served as another format.
	st.rows["d"] = &segment.Tag{AppTag: "d", Step: 5, Start: 1, Format: segment.FormatDated, Length: 6,
		FormatSpec: "v1;period=day;time_zone=UTC;prefix=;separator="}
	b := alloctest.New(t, st, segment.Config{})
	if id, err := b.Next(ctx, "d"); err == nil || errs.KindOf(err) != errs.Internal {
		t.Errorf("Next on a dated row of a store without PeriodStore = %d, %v; want a fault", id, err)
	}
}
