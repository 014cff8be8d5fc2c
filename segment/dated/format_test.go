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

func ptr(n int64) *int64 { return &n }

func TestPeriods(t *testing.T) {
	tests := []struct {
		p         dated.Period
		digits    int
		maxLength int
		layout    string
	}{
		{dated.Year, 4, 14, "yyyy"},
		{dated.Month, 6, 12, "yyyyMM"},
		{dated.Day, 8, 10, "yyyyMMdd"},
		{dated.Hour, 10, 8, "yyyyMMddHH"},
		{dated.Minute, 12, 6, "yyyyMMddHHmm"},
		{"week", 0, 0, ""},
		{"", 0, 0, ""},
	}
	for _, tc := range tests {
		if got := tc.p.Digits(); got != tc.digits {
			t.Errorf("%q.Digits() = %d, want %d", tc.p, got, tc.digits)
		}
		if got := tc.p.MaxLength(); got != tc.maxLength {
			t.Errorf("%q.MaxLength() = %d, want %d", tc.p, got, tc.maxLength)
		}
		if got := tc.p.Layout(); got != tc.layout {
			t.Errorf("%q.Layout() = %q, want %q", tc.p, got, tc.layout)
		}
		got, err := dated.ParsePeriod(string(tc.p))
		if valid := tc.digits != 0; valid != (err == nil) || (valid && got != tc.p) {
			t.Errorf("ParsePeriod(%q) = %q, %v", tc.p, got, err)
		}
	}
	if got := len(dated.Periods()); got != 5 {
		t.Errorf("Periods() has %d, want 5", got)
	}
}

func TestNewDefaults(t *testing.T) {
	f := mustNew(t, dated.Settings{})
	if f.Period() != dated.Day || f.TimeZone() != "UTC" || f.Location() != time.UTC || f.Length() != 6 ||
		f.Prefix() != "" || f.Separator() != "" || f.Start() != 1 || f.MaxSeq() != 999999 || !f.Numeric() {
		t.Errorf("New(Settings{}) = %s %s %d %q %q start %d max %d numeric %t, want day UTC 6 \"\" \"\" start 1 max 999999 numeric",
			f.Period(), f.TimeZone(), f.Length(), f.Prefix(), f.Separator(), f.Start(), f.MaxSeq(), f.Numeric())
	}
	want := dated.Settings{Period: dated.Day, TimeZone: "UTC", Length: 6, Start: ptr(1)}
	if got, err := dated.Check(dated.Settings{}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Check(Settings{}) = %+v, %v; want %+v", got, err, want)
	}
}

// TestNewAccepts: the edges of every field's range, and the settings a
// store keeps make the same format again.
func TestNewAccepts(t *testing.T) {
	tests := []dated.Settings{
		{Period: dated.Year, Length: 14},
		{Period: dated.Month, Length: 12},
		{Period: dated.Day, Length: 10},
		{Period: dated.Hour, Length: 8},
		{Period: dated.Minute, Length: 6},
		{Period: dated.Minute, Length: 1, Start: ptr(9)},
		{Length: 6, Start: ptr(999999)},
		{Prefix: "ORD", Separator: "-"},
		{Prefix: "ABCDEFGHIJKL", Separator: "_"},
		{Prefix: "abc123", Separator: "/"},
		{Prefix: "0", Separator: "."},
		{Prefix: "INV"},
		{Separator: "-"},
		{TimeZone: "Asia/Shanghai"},
		{TimeZone: "America/Argentina/Buenos_Aires"},
		{TimeZone: "America/Port-au-Prince"},
		{TimeZone: "Etc/GMT+5"},
		{TimeZone: "Etc/UTC"},
	}
	for _, s := range tests {
		f, err := dated.New(s)
		if err != nil {
			t.Errorf("New(%+v): %v", s, err)
			continue
		}
		again := mustNew(t, f.Settings())
		if !reflect.DeepEqual(again.Settings(), f.Settings()) || again.Location().String() != f.Location().String() {
			t.Errorf("New(%+v).Settings() = %+v makes %+v", s, f.Settings(), again.Settings())
		}
		if f.Settings().Start == nil || *f.Settings().Start != f.Start() {
			t.Errorf("New(%+v).Settings().Start = %v, want %d", s, f.Settings().Start, f.Start())
		}
	}
}

// TestNewRefuses: bad input for every field, refused as a bad request
// naming the field, in words that say what to send, as a case of the
// field's sentinel, without echoing the input.
func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name     string
		s        dated.Settings
		field    string
		sentinel error
		words    string
	}{
		{"unknown period", dated.Settings{Period: "week"}, "period", dated.ErrInvalidPeriod, "year, month, day, hour or minute"},
		{"period in capitals", dated.Settings{Period: "Day"}, "period", dated.ErrInvalidPeriod, "lower case"},
		{"period with a space", dated.Settings{Period: " day"}, "period", dated.ErrInvalidPeriod, "year, month, day, hour or minute"},
		{"period before length", dated.Settings{Period: "daily", Length: -1}, "period", dated.ErrInvalidPeriod, "year, month"},

		{"unknown zone", dated.Settings{TimeZone: "Mars/Olympus_Mons"}, "time_zone", dated.ErrInvalidTimeZone, "IANA name such as"},
		{"Local", dated.Settings{TimeZone: "Local"}, "time_zone", dated.ErrInvalidTimeZone, "Local is each machine's own zone"},
		{"zone as a path", dated.Settings{TimeZone: "../../etc/passwd"}, "time_zone", dated.ErrInvalidTimeZone, "not shaped like"},
		{"absolute path", dated.Settings{TimeZone: "/etc/localtime"}, "time_zone", dated.ErrInvalidTimeZone, "not shaped like"},
		{"zone with a space", dated.Settings{TimeZone: "Europe/Berlin "}, "time_zone", dated.ErrInvalidTimeZone, "not shaped like"},
		{"zone ending in /", dated.Settings{TimeZone: "Europe/"}, "time_zone", dated.ErrInvalidTimeZone, "not shaped like"},
		{"zone with //", dated.Settings{TimeZone: "Europe//Berlin"}, "time_zone", dated.ErrInvalidTimeZone, "not shaped like"},
		{"zone part starting with -", dated.Settings{TimeZone: "Etc/-5"}, "time_zone", dated.ErrInvalidTimeZone, "not shaped like"},
		{"zone too long", dated.Settings{TimeZone: strings.Repeat("A", 65)}, "time_zone", dated.ErrInvalidTimeZone, "not shaped like"},
		{"zone before length", dated.Settings{TimeZone: "Nowhere", Length: 99}, "time_zone", dated.ErrInvalidTimeZone, "IANA"},

		{"negative length", dated.Settings{Length: -1}, "length", dated.ErrInvalidLength, "from 1 to 10 for period day"},
		{"day, 8 + 11 > 18", dated.Settings{Length: 11}, "length", dated.ErrInvalidLength, "from 1 to 10 for period day"},
		{"minute, 12 + 7 = 19", dated.Settings{Period: dated.Minute, Length: 7}, "length", dated.ErrInvalidLength, "from 1 to 6 for period minute: its stamp yyyyMMddHHmm has 12 digits"},
		{"hour, 10 + 9", dated.Settings{Period: dated.Hour, Length: 9}, "length", dated.ErrInvalidLength, "from 1 to 8 for period hour"},
		{"month, 6 + 13", dated.Settings{Period: dated.Month, Length: 13}, "length", dated.ErrInvalidLength, "from 1 to 12 for period month"},
		{"year, 4 + 15", dated.Settings{Period: dated.Year, Length: 15}, "length", dated.ErrInvalidLength, "from 1 to 14 for period year"},
		{"huge length", dated.Settings{Length: 1 << 40}, "length", dated.ErrInvalidLength, "signed 64-bit integer"},
		{"length before prefix", dated.Settings{Length: 19, Prefix: "A B"}, "length", dated.ErrInvalidLength, "from 1 to 10"},

		{"prefix with a space", dated.Settings{Prefix: "OR D"}, "prefix", dated.ErrInvalidPrefix, "has a space: use up to 12 letters or digits"},
		{"prefix too long", dated.Settings{Prefix: "ORDERNUMBER12"}, "prefix", dated.ErrInvalidPrefix, "has 13 characters"},
		{"prefix with a dash", dated.Settings{Prefix: "ORD-"}, "prefix", dated.ErrInvalidPrefix, "other than a letter or digit"},
		{"prefix not ASCII", dated.Settings{Prefix: "ÄRGER"}, "prefix", dated.ErrInvalidPrefix, "other than a letter or digit"},
		{"prefix with a line break", dated.Settings{Prefix: "A\nB"}, "prefix", dated.ErrInvalidPrefix, "other than a letter or digit"},
		{"prefix before separator", dated.Settings{Prefix: " ", Separator: "+"}, "prefix", dated.ErrInvalidPrefix, "space"},

		{"separator space", dated.Settings{Separator: " "}, "separator", dated.ErrInvalidSeparator, `"-", "_", "/", "."`},
		{"separator twice", dated.Settings{Separator: "--"}, "separator", dated.ErrInvalidSeparator, "or empty for none"},
		{"separator colon", dated.Settings{Separator: ":"}, "separator", dated.ErrInvalidSeparator, "or empty for none"},
		{"separator not ASCII", dated.Settings{Separator: "–"}, "separator", dated.ErrInvalidSeparator, "or empty for none"},
		{"separator before start", dated.Settings{Separator: "#", Start: ptr(0)}, "separator", dated.ErrInvalidSeparator, "empty for none"},

		{"start 0", dated.Settings{Start: ptr(0)}, "start", dated.ErrInvalidStart, "from 1 to 999999 for length 6"},
		{"negative start", dated.Settings{Start: ptr(-5)}, "start", dated.ErrInvalidStart, "from 1 to 999999"},
		{"start beyond the digits", dated.Settings{Start: ptr(1000000)}, "start", dated.ErrInvalidStart, "must fit in its 6 digits"},
		{"start 10 for length 1", dated.Settings{Length: 1, Start: ptr(10)}, "start", dated.ErrInvalidStart, "from 1 to 9 for length 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := dated.New(tc.s)
			if err == nil {
				t.Fatalf("New(%+v) = %+v, want an error", tc.s, f.Settings())
			}
			e, ok := errs.Describe(err)
			if !ok || e.Kind != errs.BadRequest || e.Field != tc.field {
				t.Fatalf("New(%+v) = %v (%#v), want a bad_request naming %s", tc.s, err, e, tc.field)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("New(%+v) = %v, want a case of %v", tc.s, err, tc.sentinel)
			}
			if !strings.Contains(err.Error(), tc.words) || !strings.HasPrefix(err.Error(), "invalid "+tc.field+": ") {
				t.Errorf("New(%+v) says %q, want \"invalid %s: …%s…\"", tc.s, err, tc.field, tc.words)
			}
			if _, err := dated.Check(tc.s); err == nil {
				t.Errorf("Check(%+v) accepts what New refuses", tc.s)
			}
			for _, v := range []string{tc.s.Prefix, tc.s.TimeZone, string(tc.s.Period)} {
				if len(v) > 1 && strings.Contains(err.Error(), v) && !strings.Contains(tc.words, v) {
					t.Errorf("New(%+v) says %q, which echoes the input %q", tc.s, err, v)
				}
			}
		})
	}
}
