package dated_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment/dated"
)

func mustNew(tb testing.TB, s dated.Settings) *dated.Format {
	tb.Helper()
	f, err := dated.New(s)
	if err != nil {
		tb.Fatalf("New(%+v): %v", s, err)
	}
	return f
}

// at is an instant in UTC, to the second.
func at(y int, mo time.Month, d, h, mi, s int) time.Time {
	return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
}

// TestOfBoundaries pins the Key of chosen instants: every period in UTC
// and in zones ahead of it, month ends, the leap day, the year's end,
// the changes to and from summer time, zones with offsets of :30 and :45,
// a 30-minute summer time and a skipped day. Starts and ends are in UTC.
func TestOfBoundaries(t *testing.T) {
	const (
		berlin   = "Europe/Berlin"
		shanghai = "Asia/Shanghai"
	)
	tests := []struct {
		name       string
		zone       string
		period     dated.Period
		at         time.Time
		stamp      int64
		start, end time.Time
	}{
		{"UTC year", "UTC", dated.Year, at(2026, 11, 26, 13, 45, 30), 2026, at(2026, 1, 1, 0, 0, 0), at(2027, 1, 1, 0, 0, 0)},
		{"UTC month", "UTC", dated.Month, at(2026, 11, 26, 13, 45, 30), 202611, at(2026, 11, 1, 0, 0, 0), at(2026, 12, 1, 0, 0, 0)},
		{"UTC day", "UTC", dated.Day, at(2026, 11, 26, 13, 45, 30), 20261126, at(2026, 11, 26, 0, 0, 0), at(2026, 11, 27, 0, 0, 0)},
		{"UTC hour", "UTC", dated.Hour, at(2026, 11, 26, 13, 45, 30), 2026112613, at(2026, 11, 26, 13, 0, 0), at(2026, 11, 26, 14, 0, 0)},
		{"UTC minute", "UTC", dated.Minute, at(2026, 11, 26, 13, 45, 30), 202611261345, at(2026, 11, 26, 13, 45, 0), at(2026, 11, 26, 13, 46, 0)},

		{"Shanghai day before 16:00 UTC", shanghai, dated.Day, at(2026, 11, 26, 15, 59, 59), 20261126, at(2026, 11, 25, 16, 0, 0), at(2026, 11, 26, 16, 0, 0)},
		{"Shanghai day at 16:00 UTC", shanghai, dated.Day, at(2026, 11, 26, 16, 0, 0), 20261127, at(2026, 11, 26, 16, 0, 0), at(2026, 11, 27, 16, 0, 0)},
		{"Shanghai year before", shanghai, dated.Year, at(2026, 12, 31, 15, 59, 59), 2026, at(2025, 12, 31, 16, 0, 0), at(2026, 12, 31, 16, 0, 0)},
		{"Shanghai year after", shanghai, dated.Year, at(2026, 12, 31, 16, 0, 0), 2027, at(2026, 12, 31, 16, 0, 0), at(2027, 12, 31, 16, 0, 0)},
		{"Shanghai month", shanghai, dated.Month, at(2026, 11, 30, 16, 0, 0), 202612, at(2026, 11, 30, 16, 0, 0), at(2026, 12, 31, 16, 0, 0)},
		{"Shanghai hour", shanghai, dated.Hour, at(2026, 11, 26, 15, 30, 0), 2026112623, at(2026, 11, 26, 15, 0, 0), at(2026, 11, 26, 16, 0, 0)},
		{"Shanghai minute before", shanghai, dated.Minute, at(2026, 11, 26, 15, 59, 59), 202611262359, at(2026, 11, 26, 15, 59, 0), at(2026, 11, 26, 16, 0, 0)},
		{"Shanghai minute after", shanghai, dated.Minute, at(2026, 11, 26, 16, 0, 0), 202611270000, at(2026, 11, 26, 16, 0, 0), at(2026, 11, 26, 16, 1, 0)},

		{"Jan 31", "UTC", dated.Day, at(2026, 1, 31, 23, 59, 59), 20260131, at(2026, 1, 31, 0, 0, 0), at(2026, 2, 1, 0, 0, 0)},
		{"Feb 1", "UTC", dated.Day, at(2026, 2, 1, 0, 0, 0), 20260201, at(2026, 2, 1, 0, 0, 0), at(2026, 2, 2, 0, 0, 0)},
		{"January", "UTC", dated.Month, at(2026, 1, 15, 0, 0, 0), 202601, at(2026, 1, 1, 0, 0, 0), at(2026, 2, 1, 0, 0, 0)},
		{"February 2026", "UTC", dated.Month, at(2026, 2, 27, 0, 0, 0), 202602, at(2026, 2, 1, 0, 0, 0), at(2026, 3, 1, 0, 0, 0)},
		{"Feb 28 2026", "UTC", dated.Day, at(2026, 2, 28, 12, 0, 0), 20260228, at(2026, 2, 28, 0, 0, 0), at(2026, 3, 1, 0, 0, 0)},
		{"Feb 28 2028", "UTC", dated.Day, at(2028, 2, 28, 12, 0, 0), 20280228, at(2028, 2, 28, 0, 0, 0), at(2028, 2, 29, 0, 0, 0)},
		{"leap day", "UTC", dated.Day, at(2028, 2, 29, 12, 0, 0), 20280229, at(2028, 2, 29, 0, 0, 0), at(2028, 3, 1, 0, 0, 0)},
		{"February 2028", "UTC", dated.Month, at(2028, 2, 29, 23, 59, 59), 202802, at(2028, 2, 1, 0, 0, 0), at(2028, 3, 1, 0, 0, 0)},
		{"leap day's last hour", "UTC", dated.Hour, at(2028, 2, 29, 23, 59, 0), 2028022923, at(2028, 2, 29, 23, 0, 0), at(2028, 3, 1, 0, 0, 0)},
		{"leap day in Shanghai", shanghai, dated.Day, at(2028, 2, 28, 16, 0, 0), 20280229, at(2028, 2, 28, 16, 0, 0), at(2028, 2, 29, 16, 0, 0)},
		{"Dec 31 day", "UTC", dated.Day, at(2026, 12, 31, 23, 59, 59), 20261231, at(2026, 12, 31, 0, 0, 0), at(2027, 1, 1, 0, 0, 0)},
		{"Dec 31 month", "UTC", dated.Month, at(2026, 12, 31, 23, 59, 59), 202612, at(2026, 12, 1, 0, 0, 0), at(2027, 1, 1, 0, 0, 0)},
		{"Dec 31 hour", "UTC", dated.Hour, at(2026, 12, 31, 23, 59, 59), 2026123123, at(2026, 12, 31, 23, 0, 0), at(2027, 1, 1, 0, 0, 0)},
		{"Dec 31 minute", "UTC", dated.Minute, at(2026, 12, 31, 23, 59, 59), 202612312359, at(2026, 12, 31, 23, 59, 0), at(2027, 1, 1, 0, 0, 0)},
		{"Jan 1", "UTC", dated.Day, at(2027, 1, 1, 0, 0, 0), 20270101, at(2027, 1, 1, 0, 0, 0), at(2027, 1, 2, 0, 0, 0)},

		{"Berlin spring day: 23 h", berlin, dated.Day, at(2026, 3, 29, 12, 0, 0), 20260329, at(2026, 3, 28, 23, 0, 0), at(2026, 3, 29, 22, 0, 0)},
		{"Berlin fall day: 25 h", berlin, dated.Day, at(2026, 10, 25, 12, 0, 0), 20261025, at(2026, 10, 24, 22, 0, 0), at(2026, 10, 25, 23, 0, 0)},
		{"Berlin spring hour 01", berlin, dated.Hour, at(2026, 3, 29, 0, 59, 59), 2026032901, at(2026, 3, 29, 0, 0, 0), at(2026, 3, 29, 1, 0, 0)},
		{"Berlin spring: 02 skipped", berlin, dated.Hour, at(2026, 3, 29, 1, 0, 0), 2026032903, at(2026, 3, 29, 1, 0, 0), at(2026, 3, 29, 2, 0, 0)},
		{"Berlin fall hour 01", berlin, dated.Hour, at(2026, 10, 24, 23, 59, 59), 2026102501, at(2026, 10, 24, 23, 0, 0), at(2026, 10, 25, 0, 0, 0)},
		{"Berlin fall: 02 summer", berlin, dated.Hour, at(2026, 10, 25, 0, 0, 0), 2026102502, at(2026, 10, 25, 0, 0, 0), at(2026, 10, 25, 2, 0, 0)},
		{"Berlin fall: 02 winter, same Key", berlin, dated.Hour, at(2026, 10, 25, 1, 59, 59), 2026102502, at(2026, 10, 25, 0, 0, 0), at(2026, 10, 25, 2, 0, 0)},
		{"Berlin fall hour 03", berlin, dated.Hour, at(2026, 10, 25, 2, 0, 0), 2026102503, at(2026, 10, 25, 2, 0, 0), at(2026, 10, 25, 3, 0, 0)},
		{"Berlin fall minute 02:30 summer", berlin, dated.Minute, at(2026, 10, 25, 0, 30, 10), 202610250230, at(2026, 10, 25, 0, 30, 0), at(2026, 10, 25, 0, 31, 0)},
		{"Berlin fall minute 02:30 winter", berlin, dated.Minute, at(2026, 10, 25, 1, 30, 10), 202610250230, at(2026, 10, 25, 1, 30, 0), at(2026, 10, 25, 1, 31, 0)},
		{"Berlin fall minute 02:59 summer", berlin, dated.Minute, at(2026, 10, 25, 0, 59, 30), 202610250259, at(2026, 10, 25, 0, 59, 0), at(2026, 10, 25, 1, 0, 0)},
		{"Berlin fall minute 02:00 winter", berlin, dated.Minute, at(2026, 10, 25, 1, 0, 0), 202610250200, at(2026, 10, 25, 1, 0, 0), at(2026, 10, 25, 1, 1, 0)},
		{"Berlin spring minute 01:59", berlin, dated.Minute, at(2026, 3, 29, 0, 59, 30), 202603290159, at(2026, 3, 29, 0, 59, 0), at(2026, 3, 29, 1, 0, 0)},
		{"Berlin spring minute 03:00", berlin, dated.Minute, at(2026, 3, 29, 1, 0, 0), 202603290300, at(2026, 3, 29, 1, 0, 0), at(2026, 3, 29, 1, 1, 0)},
		{"Berlin March", berlin, dated.Month, at(2026, 3, 15, 0, 0, 0), 202603, at(2026, 2, 28, 23, 0, 0), at(2026, 3, 31, 22, 0, 0)},
		{"Berlin October", berlin, dated.Month, at(2026, 10, 15, 0, 0, 0), 202610, at(2026, 9, 30, 22, 0, 0), at(2026, 10, 31, 23, 0, 0)},
		{"Berlin year", berlin, dated.Year, at(2026, 6, 1, 0, 0, 0), 2026, at(2025, 12, 31, 23, 0, 0), at(2026, 12, 31, 23, 0, 0)},

		{"Kolkata hour", "Asia/Kolkata", dated.Hour, at(2026, 11, 26, 10, 0, 0), 2026112615, at(2026, 11, 26, 9, 30, 0), at(2026, 11, 26, 10, 30, 0)},
		{"Kolkata day", "Asia/Kolkata", dated.Day, at(2026, 11, 26, 10, 0, 0), 20261126, at(2026, 11, 25, 18, 30, 0), at(2026, 11, 26, 18, 30, 0)},
		{"Kolkata minute", "Asia/Kolkata", dated.Minute, at(2026, 11, 26, 10, 0, 30), 202611261530, at(2026, 11, 26, 10, 0, 0), at(2026, 11, 26, 10, 1, 0)},
		{"Kathmandu hour", "Asia/Kathmandu", dated.Hour, at(2026, 11, 26, 10, 0, 0), 2026112615, at(2026, 11, 26, 9, 15, 0), at(2026, 11, 26, 10, 15, 0)},
		{"Kathmandu day", "Asia/Kathmandu", dated.Day, at(2026, 11, 26, 18, 14, 59), 20261126, at(2026, 11, 25, 18, 15, 0), at(2026, 11, 26, 18, 15, 0)},
		{"Kathmandu minute", "Asia/Kathmandu", dated.Minute, at(2026, 11, 26, 10, 0, 30), 202611261545, at(2026, 11, 26, 10, 0, 0), at(2026, 11, 26, 10, 1, 0)},

		// Lord Howe's summer time is 30 minutes: 02:00 +11 falls back to
		// 01:30 +10:30, so hour 01 lasts 90 minutes and day 5 April 24.5 h.
		{"Lord Howe fall hour, first pass", "Australia/Lord_Howe", dated.Hour, at(2026, 4, 4, 14, 10, 0), 2026040501, at(2026, 4, 4, 14, 0, 0), at(2026, 4, 4, 15, 30, 0)},
		{"Lord Howe fall hour, second pass", "Australia/Lord_Howe", dated.Hour, at(2026, 4, 4, 15, 10, 0), 2026040501, at(2026, 4, 4, 14, 0, 0), at(2026, 4, 4, 15, 30, 0)},
		{"Lord Howe fall day", "Australia/Lord_Howe", dated.Day, at(2026, 4, 5, 0, 0, 0), 20260405, at(2026, 4, 4, 13, 0, 0), at(2026, 4, 5, 13, 30, 0)},
		// Samoa skipped 30 December 2011, moving from −10 to +14.
		{"Apia before the skipped day", "Pacific/Apia", dated.Day, at(2011, 12, 30, 9, 59, 59), 20111229, at(2011, 12, 29, 10, 0, 0), at(2011, 12, 30, 10, 0, 0)},
		{"Apia after the skipped day", "Pacific/Apia", dated.Day, at(2011, 12, 30, 10, 0, 0), 20111231, at(2011, 12, 30, 10, 0, 0), at(2011, 12, 31, 10, 0, 0)},
		{"Apia December 2011", "Pacific/Apia", dated.Month, at(2011, 12, 30, 10, 0, 0), 201112, at(2011, 12, 1, 10, 0, 0), at(2011, 12, 31, 10, 0, 0)},

		{"year 9999", "UTC", dated.Year, at(9999, 12, 31, 23, 59, 59), 9999, at(9999, 1, 1, 0, 0, 0), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year 1000", "UTC", dated.Minute, at(1000, 1, 1, 0, 0, 0), 100001010000, at(1000, 1, 1, 0, 0, 0), at(1000, 1, 1, 0, 1, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustNew(t, dated.Settings{Period: tc.period, TimeZone: tc.zone})
			k, err := f.Of(tc.at)
			if err != nil {
				t.Fatalf("Of(%v): %v", tc.at, err)
			}
			if k.Stamp != tc.stamp || !k.Start.Equal(tc.start) || !k.End.Equal(tc.end) {
				t.Errorf("Of(%v) = %d [%v, %v), want %d [%v, %v)", tc.at, k.Stamp, k.Start.UTC(), k.End.UTC(), tc.stamp, tc.start, tc.end)
			}
			if !k.Contains(tc.at) || k.Contains(k.End) || k.Contains(k.Start.Add(-time.Nanosecond)) {
				t.Errorf("%+v: Contains wrong at %v, its End or just before its Start", k, tc.at)
			}
			if k.Start.Location() != f.Location() || k.End.Location() != f.Location() {
				t.Errorf("Key in %v and %v, want the format's zone %v", k.Start.Location(), k.End.Location(), f.Location())
			}
			for _, u := range []time.Time{k.Start, k.End.Add(-time.Nanosecond)} {
				if got, err := f.Of(u); err != nil || !sameKey(got, k) {
					t.Errorf("Of(%v) = %+v, %v; want the same Key as Of(%v): %+v", u, got, err, tc.at, k)
				}
			}
		})
	}
}

func sameKey(a, b dated.Key) bool {
	return a.Stamp == b.Stamp && a.Start.Equal(b.Start) && a.End.Equal(b.End)
}

// TestOfDurations states the lengths the wall clock gives periods across
// zone changes.
func TestOfDurations(t *testing.T) {
	tests := []struct {
		zone   string
		period dated.Period
		at     time.Time
		want   time.Duration
	}{
		{"Europe/Berlin", dated.Day, at(2026, 3, 29, 12, 0, 0), 23 * time.Hour},
		{"Europe/Berlin", dated.Day, at(2026, 10, 25, 12, 0, 0), 25 * time.Hour},
		{"Europe/Berlin", dated.Day, at(2026, 10, 26, 12, 0, 0), 24 * time.Hour},
		{"Europe/Berlin", dated.Hour, at(2026, 10, 25, 1, 0, 0), 2 * time.Hour},
		{"Europe/Berlin", dated.Month, at(2026, 3, 1, 12, 0, 0), 31*24*time.Hour - time.Hour},
		{"Europe/Berlin", dated.Month, at(2026, 10, 1, 12, 0, 0), 31*24*time.Hour + time.Hour},
		{"America/New_York", dated.Day, at(2026, 3, 8, 12, 0, 0), 23 * time.Hour},
		{"America/New_York", dated.Day, at(2026, 11, 1, 12, 0, 0), 25 * time.Hour},
		{"Australia/Lord_Howe", dated.Day, at(2026, 4, 5, 0, 0, 0), 24*time.Hour + 30*time.Minute},
		{"Australia/Lord_Howe", dated.Hour, at(2026, 4, 4, 15, 0, 0), 90 * time.Minute},
		{"UTC", dated.Year, at(2028, 6, 1, 0, 0, 0), 366 * 24 * time.Hour},
		{"UTC", dated.Month, at(2028, 2, 1, 0, 0, 0), 29 * 24 * time.Hour},
	}
	for _, tc := range tests {
		f := mustNew(t, dated.Settings{Period: tc.period, TimeZone: tc.zone})
		k, err := f.Of(tc.at)
		if err != nil {
			t.Fatalf("%s %s Of(%v): %v", tc.zone, tc.period, tc.at, err)
		}
		if got := k.End.Sub(k.Start); got != tc.want {
			t.Errorf("%s %s %d lasts %v, want %v", tc.zone, tc.period, k.Stamp, got, tc.want)
		}
	}
}

// TestOfClockRange: an instant whose year in the zone is not 1000 to
// 9999 has no stamp of the period's digits.
func TestOfClockRange(t *testing.T) {
	for _, tc := range []struct {
		zone string
		at   time.Time
	}{
		{"UTC", time.Date(999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"UTC", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"Asia/Shanghai", at(9999, 12, 31, 16, 0, 0)},
		{"UTC", time.Time{}},
	} {
		f := mustNew(t, dated.Settings{TimeZone: tc.zone})
		if k, err := f.Of(tc.at); !errors.Is(err, dated.ErrClockRange) {
			t.Errorf("%s Of(%v) = %+v, %v; want ErrClockRange", tc.zone, tc.at, k, err)
		}
	}
}
