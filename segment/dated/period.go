package dated

import (
	"strings"
	"time"
)

// Period is how often a dated tag's sequence restarts: the unit its stamp
// counts, named as docs/api.md §11 names it.
type Period string

// The periods of docs/api.md §11, with their stamps.
const (
	Year   Period = "year"   // yyyy
	Month  Period = "month"  // yyyyMM
	Day    Period = "day"    // yyyyMMdd (the default)
	Hour   Period = "hour"   // yyyyMMddHH
	Minute Period = "minute" // yyyyMMddHHmm: for short cycles and tests
)

// Periods returns every Period, longest first.
func Periods() []Period { return []Period{Year, Month, Day, Hour, Minute} }

// ParsePeriod returns the Period named s, or an error that is
// ErrInvalidPeriod (Kind BadRequest, Field "period"). Names are lower
// case, as the API spells them; "" is not a name (Settings reads it as
// the default, Day).
func ParsePeriod(s string) (Period, error) {
	p := Period(s)
	if p.rank() != 0 {
		return p, nil
	}
	for _, q := range Periods() {
		if strings.EqualFold(s, string(q)) {
			return "", errPeriodCase
		}
	}
	return "", ErrInvalidPeriod
}

// rank is 1 for Year to 5 for Minute, and 0 for a Period that is not one:
// the number of fields (year, month, day, hour, minute) its stamp has.
func (p Period) rank() int {
	switch p {
	case Year:
		return 1
	case Month:
		return 2
	case Day:
		return 3
	case Hour:
		return 4
	case Minute:
		return 5
	}
	return 0
}

// Digits returns the number of digits of p's stamp: 4 for Year, 6 for
// Month, 8 for Day, 10 for Hour, 12 for Minute; 0 for a Period that is not
// one.
func (p Period) Digits() int { return digitsOf(p.rank()) }

// MaxLength returns the most sequence digits a tag of period p may have:
// 18 − p.Digits(); 0 for a Period that is not one.
func (p Period) MaxLength() int {
	if p.rank() == 0 {
		return 0
	}
	return MaxDigits - p.Digits()
}

// Layout returns p's stamp as docs/api.md §11 writes it ("yyyyMMdd" for Day);
// "" for a Period that is not one.
func (p Period) Layout() string { return "yyyyMMddHHmm"[:p.Digits()] }

func digitsOf(rank int) int {
	if rank == 0 {
		return 0
	}
	return 2 + 2*rank
}

// fields are a wall-clock reading truncated to a period: the fields past
// the period's are at their first value (month 1, day 1, hour 0, minute 0).
type fields struct {
	year, month, day, hour, minute int
}

// wallFields returns t's wall-clock reading in t's location, truncated to
// rank's fields.
func wallFields(t time.Time, rank int) fields {
	y, mo, d := t.Date()
	h, mi, _ := t.Clock()
	f := fields{y, int(mo), d, h, mi}
	f.truncate(rank)
	return f
}

func (f *fields) truncate(rank int) {
	if rank < 2 {
		f.month = 1
	}
	if rank < 3 {
		f.day = 1
	}
	if rank < 4 {
		f.hour = 0
	}
	if rank < 5 {
		f.minute = 0
	}
}

// stamp writes f's first rank fields as one decimal number: 2026,
// 202611, 20261126, …
func (f fields) stamp(rank int) int64 {
	s := int64(f.year)
	parts := [...]int{f.month, f.day, f.hour, f.minute}
	for _, v := range parts[:rank-1] {
		s = s*100 + int64(v)
	}
	return s
}

// splitStamp is the inverse of stamp: it reads s as rank fields and
// reports whether they are a real calendar date and time (month 1–12, a
// day the month has, hour 0–23, minute 0–59) in years 1000 to 9999. It
// does not say whether a zone's wall clock ever read it: a skipped hour
// is a calendar time too.
func splitStamp(s int64, rank int) (fields, bool) {
	f := fields{month: 1, day: 1}
	parts := [...]*int{&f.month, &f.day, &f.hour, &f.minute}
	for i := rank - 2; i >= 0; i-- {
		*parts[i] = int(s % 100)
		s /= 100
	}
	f.year = int(s)
	ok := f.year >= minYear && f.year <= maxYear &&
		f.month >= 1 && f.month <= 12 &&
		f.day >= 1 && f.day <= daysIn(f.year, time.Month(f.month)) &&
		f.hour < 24 && f.minute < 60
	return f, ok
}

// daysIn returns the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// wallSeconds returns f read as a UTC time, in Unix seconds: a wall-clock
// reading on a line without offsets, which an offset turns into an
// instant.
func (f fields) wallSeconds() int64 {
	return time.Date(f.year, time.Month(f.month), f.day, f.hour, f.minute, 0, 0, time.UTC).Unix()
}

// next returns the first reading of the period after f's, of rank's
// length (time.Date carries month 13 into the next year, and so on).
func (f fields) next(rank int) fields {
	switch rank {
	case 1:
		f.year++
	case 2:
		f.month++
	case 3:
		f.day++
	case 4:
		f.hour++
	default:
		f.minute++
	}
	t := time.Date(f.year, time.Month(f.month), f.day, f.hour, f.minute, 0, 0, time.UTC)
	return wallFields(t, rank)
}
