package dated

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Bounds and defaults of docs/api.md §11.
const (
	// MaxDigits is the most digits of stamp and sequence together: a
	// numeric ID is below 10^18 < 2^63.
	MaxDigits = 18
	// MaxPrefix is the most characters of a prefix.
	MaxPrefix = 12
	// MaxTextLength is the longest text ID: a prefix, two separators and
	// MaxDigits digits.
	MaxTextLength = MaxPrefix + 2 + MaxDigits
	// DefaultPeriod, DefaultLength, DefaultTimeZone and DefaultStart are
	// what a Settings field left out means.
	DefaultPeriod   = Day
	DefaultLength   = 6
	DefaultTimeZone = "UTC"
	DefaultStart    = 1

	minYear, maxYear = 1000, 9999
	maxZoneName      = 64
)

// Separators lists the separators a Settings may name besides "" (none).
const Separators = "-_/."

// Settings are a dated tag's format as a client asks for it; the zero
// value of each field means its default. They are also what a store keeps:
// Format.Settings returns them with every default written out.
type Settings struct {
	// Period is when the sequence restarts; "" means Day.
	Period Period
	// TimeZone is the IANA name of the zone the period is read in
	// ("Asia/Shanghai"); "" means UTC. "Local" is refused.
	TimeZone string
	// Length is the digits of the sequence part, zero-padded; 0 means 6.
	// From 1 to 18 − Period.Digits(). An int64 so that a front end hands
	// over any integer it read; the range is checked here.
	Length int64
	// Prefix is up to 12 letters or digits (A-Z, a-z, 0-9) written before
	// the stamp; "" for none.
	Prefix string
	// Separator is one of - _ / . written between the parts, or "" for
	// none.
	Separator string
	// Start is the first sequence number of every period, nil when not
	// given: 1. A given start is checked as given: from 1 to
	// 10^Length − 1.
	Start *int64
}

// Format is a checked dated format: what Of, ID, AppendText and the
// parsers work with. It is immutable and safe for concurrent use.
type Format struct {
	period     Period
	rank       int
	zone       string
	loc        *time.Location
	length     int
	pow        int64 // 10^length
	prefix     string
	sep        string
	start      int64
	minStamp   int64 // 10^(digits−1): the stamp of year 1000
	stampLimit int64 // 10^digits
}

// New checks s and returns its Format. The error is an *errs.Error of
// Kind BadRequest for the first field at fault, in the order period,
// time_zone, length, prefix, separator, start, whose words say what a
// valid value is; it is also that field's sentinel: ErrInvalidPeriod,
// ErrInvalidTimeZone, ErrInvalidLength, ErrInvalidPrefix,
// ErrInvalidSeparator, ErrInvalidStart. No message holds the value sent,
// so every one is safe to answer and to log.
func New(s Settings) (*Format, error) {
	f := &Format{period: s.Period, zone: s.TimeZone, length: int(s.Length), prefix: s.Prefix, sep: s.Separator, start: DefaultStart}
	if f.period == "" {
		f.period = DefaultPeriod
	}
	var err error
	if f.period, err = ParsePeriod(string(f.period)); err != nil {
		return nil, err
	}
	f.rank = f.period.rank()
	if f.zone == "" {
		f.zone = DefaultTimeZone
	}
	if f.loc, err = loadZone(f.zone); err != nil {
		return nil, err
	}
	if s.Length == 0 {
		f.length = DefaultLength
	} else if s.Length < 1 || s.Length > int64(f.period.MaxLength()) {
		return nil, lengthError(f.period)
	}
	if err := checkPrefix(f.prefix); err != nil {
		return nil, err
	}
	if len(f.sep) > 1 || (f.sep != "" && !containsByte(Separators, f.sep[0])) {
		return nil, ErrInvalidSeparator
	}
	f.pow = pow10(f.length)
	if s.Start != nil {
		f.start = *s.Start
	}
	if f.start < 1 || f.start > f.MaxSeq() {
		return nil, startError(f.length, f.MaxSeq())
	}
	f.minStamp = pow10(f.period.Digits() - 1)
	f.stampLimit = pow10(f.period.Digits())
	return f, nil
}

// Check returns s with every default written out, as a store keeps it,
// or New's error.
func Check(s Settings) (Settings, error) {
	f, err := New(s)
	if err != nil {
		return Settings{}, err
	}
	return f.Settings(), nil
}

// loadZone loads the zone named name, refusing what is not an IANA name
// before time.LoadLocation sees it: "Local" (each machine's own zone),
// paths, and anything longer or stranger than the database's names.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, errZoneLocal
	}
	if len(name) > maxZoneName || !zoneName(name) {
		return nil, errZoneShape
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, ErrInvalidTimeZone
	}
	return loc, nil
}

// zoneName reports whether s is shaped like a tz database name: parts of
// letters, digits, '_', '-' and '+' joined by single '/'s, none starting
// with '.' or '-'.
func zoneName(s string) bool {
	if s == "" {
		return false
	}
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			if start {
				return false
			}
			start = true
			continue
		case start && c == '-':
			return false
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '+':
		default:
			return false
		}
		start = false
	}
	return !start
}

// checkPrefix refuses a prefix that is not [A-Za-z0-9]{0,12}, saying why.
func checkPrefix(p string) error {
	if n := utf8.RuneCountInString(p); n > MaxPrefix {
		return invalid("prefix", "has "+strconv.Itoa(n)+" characters: use up to 12 letters or digits (A-Z, a-z, 0-9)", ErrInvalidPrefix)
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == ' ':
			return errPrefixSpace
		default:
			return errPrefixChar
		}
	}
	return nil
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// lengthError is the error for a length outside period p's range.
func lengthError(p Period) error {
	return invalid("length", fmt.Sprintf("must be from 1 to %d for period %s: its stamp %s has %d digits, and stamp + sequence "+
		"may have at most %d so that the number fits a signed 64-bit integer", p.MaxLength(), p, p.Layout(), p.Digits(), MaxDigits),
		ErrInvalidLength)
}

// startError is the error for a start that leaves a period no number.
func startError(length int, maxSeq int64) error {
	return invalid("start", fmt.Sprintf("must be from 1 to %d for length %d: every period's first number must fit in its %d digits",
		maxSeq, length, length), ErrInvalidStart)
}

// pow10 returns 10^n for 0 ≤ n ≤ 18.
func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// Period returns when f's sequence restarts.
func (f *Format) Period() Period { return f.period }

// TimeZone returns the IANA name of f's zone, as given ("UTC" by default).
func (f *Format) TimeZone() string { return f.zone }

// Location returns f's zone.
func (f *Format) Location() *time.Location { return f.loc }

// Length returns the digits of f's sequence part.
func (f *Format) Length() int { return f.length }

// Prefix returns f's prefix, "" for none.
func (f *Format) Prefix() string { return f.prefix }

// Separator returns f's separator, "" for none.
func (f *Format) Separator() string { return f.sep }

// Start returns the first sequence number of every period.
func (f *Format) Start() int64 { return f.start }

// MaxSeq returns the last sequence number of every period: 10^length − 1.
// A period issues MaxSeq() − Start() + 1 numbers.
func (f *Format) MaxSeq() int64 { return f.pow - 1 }

// Numeric reports whether f's IDs are numbers: no prefix, no separator.
// Otherwise they are text only.
func (f *Format) Numeric() bool { return f.prefix == "" && f.sep == "" }

// Settings returns f's settings with every default written out, so that
// New(f.Settings()) is f again.
func (f *Format) Settings() Settings {
	start := f.start
	return Settings{Period: f.period, TimeZone: f.zone, Length: int64(f.length), Prefix: f.prefix, Separator: f.sep, Start: &start}
}
