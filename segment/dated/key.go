package dated

import "time"

// Key is a period as the allocator meets it: the stamp its IDs carry and
// the stretch of real time over which the zone's wall clock reads it.
//
// A store keeps one counter per (tag, Stamp), never per stretch: when a
// stamp comes round again (the minutes of the hour repeated when summer
// time ends), its numbers continue where they stopped (package comment).
type Key struct {
	// Stamp is the period's wall-clock reading, yyyy to yyyyMMddHHmm as a
	// number: 20261126 for a day.
	Stamp int64
	// Start is the first instant of the stretch; End the first instant
	// after it, where the next period's Key starts. Both are in the
	// format's zone.
	Start, End time.Time
}

// Contains reports whether t is in [k.Start, k.End).
func (k Key) Contains(t time.Time) bool { return !t.Before(k.Start) && t.Before(k.End) }

// maxHops bounds the zone changes Of crosses to find a period's ends. A
// year has at most a handful; a stretch found after maxHops hops is
// shorter than the truth, which costs an extra Of, never a repeat.
const maxHops = 32

// Of returns the Key of the period that contains t in f's zone: the
// stamp of t's wall-clock reading there, and the longest stretch around t
// over which that reading stays the same. The next period is Of(k.End).
// It reads no clock: t is the caller's (the instance's clock, which the
// caller bounds by the store's). Across a zone change the stretch is what
// the wall clock does: a day of 23 or 25 hours, an hour of two when the
// clock falls back, no stretch at all for a skipped stamp.
//
// Errors: ErrClockRange when t is outside the years 1000 to 9999 in f's
// zone.
func (f *Format) Of(t time.Time) (Key, error) {
	t = t.In(f.loc)
	w := wallFields(t, f.rank)
	if w.year < minYear || w.year > maxYear {
		return Key{}, ErrClockRange
	}
	s := w.stamp(f.rank)
	return Key{
		Stamp: s,
		Start: f.stretchStart(t, s, w.wallSeconds()),
		End:   f.stretchEnd(t, s, w.next(f.rank).wallSeconds()),
	}, nil
}

// stampAt returns the stamp of t's wall-clock reading in f's zone.
func (f *Format) stampAt(t time.Time) int64 {
	return wallFields(t.In(f.loc), f.rank).stamp(f.rank)
}

// stretchStart returns the first instant of the stretch of stamp s around
// t (in f's zone), whose wall-clock start is w0 (Unix seconds read as UTC).
//
// Between two zone changes the wall clock is the instant plus a constant
// offset, so within t's zone interval the stamp begins at w0 − offset,
// unless that lies before the interval: then the stamp was already on the
// wall clock when the interval began, and the search goes on in the
// interval before if the wall clock read s there too (a fall-back that
// returns into s), or stops at the change (a spring-forward that jumps
// into the middle of s).
func (f *Format) stretchStart(t time.Time, s, w0 int64) time.Time {
	u := t
	for range maxHops {
		_, off := u.Zone()
		zoneStart, _ := u.ZoneBounds()
		start := time.Unix(w0-int64(off), 0).In(f.loc)
		if zoneStart.IsZero() || start.After(zoneStart) {
			return start
		}
		before := zoneStart.Add(-time.Nanosecond)
		if f.stampAt(before) != s {
			return zoneStart
		}
		u = before
	}
	return u
}

// stretchEnd is stretchStart's mirror: the first instant after t at which
// the wall clock no longer reads s, whose next stamp begins at w1 on the
// wall clock.
func (f *Format) stretchEnd(t time.Time, s, w1 int64) time.Time {
	u := t
	for range maxHops {
		_, off := u.Zone()
		_, zoneEnd := u.ZoneBounds()
		end := time.Unix(w1-int64(off), 0).In(f.loc)
		if zoneEnd.IsZero() || end.Before(zoneEnd) {
			return end
		}
		if f.stampAt(zoneEnd) != s {
			return zoneEnd
		}
		u = zoneEnd
	}
	return u.Add(time.Nanosecond)
}

// KeyOfStamp returns the Key of the period whose stamp is stamp: its
// first stretch when the stamp comes round twice (a fall-back), whose End
// is then the earlier one. A front end uses it to say when an ID's period
// ends (the ID carries its stamp, while the clock may have passed a
// boundary since it was issued). Errors: ErrClockRange for a stamp that is
// not a reading of f's period in the years 1000 to 9999, or one the wall
// clock skips.
func (f *Format) KeyOfStamp(stamp int64) (Key, error) {
	if stamp < f.minStamp || stamp >= f.stampLimit {
		return Key{}, ErrClockRange
	}
	parts := [4]int{1, 1, 0, 0} // month, day, hour, minute: the period's start
	rest := stamp
	for i := f.rank - 1; i >= 1; i-- {
		parts[i-1] = int(rest % 100)
		rest /= 100
	}
	year := int(rest)
	t := time.Date(year, time.Month(parts[0]), parts[1], parts[2], parts[3], 0, 0, f.loc)
	k, err := f.Of(t)
	if err != nil || k.Stamp != stamp {
		return Key{}, ErrClockRange
	}
	return k, nil
}
