package dated_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment/dated"
)

// wallStamp is the oracle: the stamp of u's wall-clock reading in loc, as
// package time formats it.
func wallStamp(tb testing.TB, u time.Time, loc *time.Location, p dated.Period) int64 {
	tb.Helper()
	s, err := strconv.ParseInt(u.In(loc).Format("200601021504"[:p.Digits()]), 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// windows are stretches around zone changes, year ends and the leap day.
var windows = []struct {
	zone     string
	from, to time.Time
}{
	{"UTC", at(2027, 12, 31, 20, 0, 0), at(2028, 1, 1, 4, 0, 0)},
	{"UTC", at(2028, 2, 28, 20, 0, 0), at(2028, 3, 1, 4, 0, 0)},
	{"Asia/Shanghai", at(2026, 12, 31, 12, 0, 0), at(2027, 1, 1, 4, 0, 0)},
	{"Europe/Berlin", at(2026, 3, 28, 20, 0, 0), at(2026, 3, 29, 6, 0, 0)},
	{"Europe/Berlin", at(2026, 10, 24, 20, 0, 0), at(2026, 10, 25, 6, 0, 0)},
	{"America/New_York", at(2026, 11, 1, 2, 0, 0), at(2026, 11, 1, 9, 0, 0)},
	{"Asia/Kolkata", at(2026, 11, 26, 16, 0, 0), at(2026, 11, 26, 20, 0, 0)},
	{"Asia/Kathmandu", at(2026, 11, 26, 16, 0, 0), at(2026, 11, 26, 20, 0, 0)},
	{"Australia/Lord_Howe", at(2026, 4, 4, 12, 0, 0), at(2026, 4, 4, 18, 0, 0)},
	{"Australia/Lord_Howe", at(2026, 10, 3, 12, 0, 0), at(2026, 10, 3, 18, 0, 0)},
	{"Pacific/Apia", at(2011, 12, 29, 0, 0, 0), at(2011, 12, 31, 12, 0, 0)},
}

// TestOfAgainstTheWallClock walks each window Key by Key with Of(k.End),
// for every period, and checks every Key against the wall clock: its
// stamp is the reading at its first and last instants, the reading just
// before it differs (so the stretch is the longest), and the next Key
// starts where it ends with another stamp. Then it samples the window
// every 47.3 s: Of of any instant is the longest stretch of the wall
// clock's reading there.
func TestOfAgainstTheWallClock(t *testing.T) {
	for _, w := range windows {
		for _, p := range dated.Periods() {
			t.Run(w.zone+" "+w.from.Format("2006-01-02")+" "+string(p), func(t *testing.T) {
				f := mustNew(t, dated.Settings{Period: p, TimeZone: w.zone})
				loc := f.Location()
				k, err := f.Of(w.from)
				if err != nil {
					t.Fatal(err)
				}
				for k.Start.Before(w.to) {
					last := k.End.Add(-time.Nanosecond)
					switch {
					case !k.Start.Before(k.End):
						t.Fatalf("%+v is empty", k)
					case wallStamp(t, k.Start, loc, p) != k.Stamp || wallStamp(t, last, loc, p) != k.Stamp:
						t.Fatalf("%+v: the wall clock reads %d at its start and %d at its end", k,
							wallStamp(t, k.Start, loc, p), wallStamp(t, last, loc, p))
					case wallStamp(t, k.Start.Add(-time.Nanosecond), loc, p) == k.Stamp:
						t.Fatalf("%+v: the wall clock read its stamp just before its start too", k)
					}
					next, err := f.Of(k.End)
					if err != nil {
						t.Fatal(err)
					}
					if !next.Start.Equal(k.End) || next.Stamp == k.Stamp {
						t.Fatalf("after %+v comes %+v, want another stamp starting at its end", k, next)
					}
					k = next
				}
				for u := w.from; u.Before(w.to); u = u.Add(47*time.Second + 300*time.Millisecond) {
					k, err := f.Of(u)
					if err != nil {
						t.Fatal(err)
					}
					if want := wallStamp(t, u, loc, p); k.Stamp != want || !k.Contains(u) {
						t.Fatalf("Of(%v) = %+v, want stamp %d around it", u, k, want)
					}
					if wallStamp(t, k.Start.Add(-time.Nanosecond), loc, p) == k.Stamp || wallStamp(t, k.End, loc, p) == k.Stamp {
						t.Fatalf("Of(%v) = %+v: the wall clock reads its stamp beyond it too", u, k)
					}
				}
			})
		}
	}
}

// TestOfSummerTimeStamps counts the stamps Berlin's changes give: the hour
// skipped in spring has no stamp; in autumn the repeated hour is one Key
// of two hours, and each of its minutes is two Keys with one Stamp, which
// the store's counter per stamp continues across (package comment).
func TestOfSummerTimeStamps(t *testing.T) {
	keys := func(p dated.Period, from, to time.Time) map[int64]int {
		f := mustNew(t, dated.Settings{Period: p, TimeZone: "Europe/Berlin"})
		seen := map[int64]int{}
		k, err := f.Of(from)
		for ; err == nil && k.Start.Before(to); k, err = f.Of(k.End) {
			seen[k.Stamp]++
		}
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
	spring := keys(dated.Minute, at(2026, 3, 29, 0, 0, 0), at(2026, 3, 29, 2, 0, 0))
	if len(spring) != 120 {
		t.Errorf("spring: %d minute stamps in the two hours around the change, want 120", len(spring))
	}
	for s := range spring {
		if s/100 == 2026032902 {
			t.Errorf("spring: minute stamp %d issued, but the wall clock never reads 02:xx", s)
		}
	}
	if h := keys(dated.Hour, at(2026, 3, 29, 0, 0, 0), at(2026, 3, 29, 2, 0, 0)); h[2026032902] != 0 || h[2026032901] != 1 || h[2026032903] != 1 {
		t.Errorf("spring hours: %v, want 01 and 03 once, no 02", h)
	}

	fall := keys(dated.Minute, at(2026, 10, 25, 0, 0, 0), at(2026, 10, 25, 2, 0, 0))
	if len(fall) != 60 {
		t.Errorf("fall: %d minute stamps in the two real hours of 02:xx, want 60", len(fall))
	}
	for s, n := range fall {
		if s/100 != 2026102502 || n != 2 {
			t.Errorf("fall: minute stamp %d in %d Keys, want each 02:mm in 2", s, n)
		}
	}
	if h := keys(dated.Hour, at(2026, 10, 24, 23, 0, 0), at(2026, 10, 25, 3, 0, 0)); len(h) != 3 || h[2026102502] != 1 {
		t.Errorf("fall hours: %v, want 01, 02 and 03 once each", h)
	}
}
