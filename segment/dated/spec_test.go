package dated_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment/dated"
)

// TestSpecRoundTrip: every setting's spec reads back as the same settings,
// the spec is canonical (settings equal after Check make equal text), and
// the text of the default settings is pinned, as stores keep it.
func TestSpecRoundTrip(t *testing.T) {
	tests := []struct {
		s    dated.Settings
		spec string
	}{
		{dated.Settings{}, "v1;period=day;time_zone=UTC;prefix=;separator="},
		{dated.Settings{Period: dated.Day, TimeZone: "UTC"}, "v1;period=day;time_zone=UTC;prefix=;separator="},
		{dated.Settings{Period: dated.Minute, TimeZone: "Asia/Shanghai", Prefix: "ORD", Separator: "-"},
			"v1;period=minute;time_zone=Asia/Shanghai;prefix=ORD;separator=-"},
		{dated.Settings{Period: dated.Year, Separator: "."}, "v1;period=year;time_zone=UTC;prefix=;separator=."},
		{dated.Settings{Period: dated.Month, TimeZone: "America/Argentina/Buenos_Aires", Prefix: "INV"},
			"v1;period=month;time_zone=America/Argentina/Buenos_Aires;prefix=INV;separator="},
		{dated.Settings{Period: dated.Hour, TimeZone: "Etc/GMT+5", Prefix: "ABCDEFGHIJKL", Separator: "/"},
			"v1;period=hour;time_zone=Etc/GMT+5;prefix=ABCDEFGHIJKL;separator=/"},
		// Length and start are the tag's own columns, not the spec's.
		{dated.Settings{Length: 9, Start: ptr(100), Separator: "_"}, "v1;period=day;time_zone=UTC;prefix=;separator=_"},
	}
	for _, tc := range tests {
		checked, err := dated.Check(tc.s)
		if err != nil {
			t.Fatalf("Check(%+v): %v", tc.s, err)
		}
		if got := tc.s.Spec(); got != tc.spec {
			t.Errorf("%+v.Spec() = %q, want %q", tc.s, got, tc.spec)
		}
		if got := checked.Spec(); got != tc.spec {
			t.Errorf("Check(%+v).Spec() = %q, want %q (canonical)", tc.s, got, tc.spec)
		}
		back, err := dated.ParseSpec(tc.spec)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tc.spec, err)
			continue
		}
		want := dated.Settings{Period: checked.Period, TimeZone: checked.TimeZone, Prefix: checked.Prefix, Separator: checked.Separator}
		if !reflect.DeepEqual(back, want) {
			t.Errorf("ParseSpec(%q) = %+v, want %+v", tc.spec, back, want)
		}
		if got := mustNew(t, checked).Spec(); got != tc.spec {
			t.Errorf("Format.Spec() = %q, want %q", got, tc.spec)
		}
	}
}

// TestParseSpecRefuses: only the text Spec writes is read; another
// version is refused in words that say to upgrade; a value New refuses
// is refused naming its field.
func TestParseSpecRefuses(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		field    string
		sentinel error
		words    string
	}{
		{"empty", "", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"no version", "period=day;time_zone=UTC;prefix=;separator=", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"newer version", "v2;period=day;time_zone=UTC;prefix=;separator=;week_start=monday", "format_spec", dated.ErrInvalidSpec, "upgrade this instance"},
		{"fields reordered", "v1;time_zone=UTC;period=day;prefix=;separator=", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"field missing", "v1;period=day;time_zone=UTC;prefix=", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"field left over", "v1;period=day;time_zone=UTC;prefix=;separator=;x=1", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"default left out", "v1;period=;time_zone=UTC;prefix=;separator=", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"zone left out", "v1;period=day;time_zone=;prefix=;separator=", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"trailing ;", "v1;period=day;time_zone=UTC;prefix=;separator=;", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"spaces", "v1; period=day;time_zone=UTC;prefix=;separator=", "format_spec", dated.ErrInvalidSpec, "as idalloc writes them"},
		{"unknown period", "v1;period=week;time_zone=UTC;prefix=;separator=", "period", dated.ErrInvalidPeriod, "year, month"},
		{"unknown zone", "v1;period=day;time_zone=Mars/Olympus_Mons;prefix=;separator=", "time_zone", dated.ErrInvalidTimeZone, "IANA"},
		{"Local", "v1;period=day;time_zone=Local;prefix=;separator=", "time_zone", dated.ErrInvalidTimeZone, "Local"},
		{"prefix with a space", "v1;period=day;time_zone=UTC;prefix=O D;separator=", "prefix", dated.ErrInvalidPrefix, "space"},
		{"separator of two", "v1;period=day;time_zone=UTC;prefix=;separator=--", "separator", dated.ErrInvalidSeparator, `"-", "_"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := dated.ParseSpec(tc.spec)
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("ParseSpec = %+v, %v; want %v", s, err, tc.sentinel)
			}
			e, ok := errs.Describe(err)
			if !ok || e.Kind != errs.BadRequest || e.Field != tc.field || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("error %q (field %q), want bad_request naming %q with %q", err, e.Field, tc.field, tc.words)
			}
		})
	}
}

// TestExhaustedError: a front end reads the wait without words; the kind
// and the sentinel match; the seconds round up and are never 0.
func TestExhaustedError(t *testing.T) {
	tests := []struct {
		wait    time.Duration
		seconds int64
	}{
		{37 * time.Second, 37},
		{36*time.Second + time.Millisecond, 37},
		{time.Millisecond, 1},
		{0, 1},
		{24 * time.Hour, 86400},
	}
	for _, tc := range tests {
		var err error = &dated.ExhaustedError{Stamp: 20261126, Next: at(2026, 11, 26, 16, 0, 0), RetryAfter: tc.wait}
		err = errors.Join(errors.New("context"), err)
		var pe *dated.ExhaustedError
		if !errors.As(err, &pe) || pe.RetryAfter != tc.wait || pe.RetryAfterSeconds() != tc.seconds {
			t.Errorf("wait %v: errors.As = %v, seconds %d; want %d", tc.wait, pe, pe.RetryAfterSeconds(), tc.seconds)
		}
		if !errors.Is(err, dated.ErrPeriodExhausted) || errs.KindOf(err) != errs.PeriodExhausted {
			t.Errorf("wait %v: not ErrPeriodExhausted of kind period_exhausted: %v", tc.wait, err)
		}
	}
	e := &dated.ExhaustedError{RetryAfter: 90 * time.Second}
	if want := "this period's numbers are all issued: retry when the next period begins, or create a tag with a longer length (the next period begins in 90s)"; e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
}
