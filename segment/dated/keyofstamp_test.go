package dated_test

import (
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment/dated"
)

// TestKeyOfStamp: the Key of a stamp is the Key of an instant in it, for
// every period, in a zone with an offset and one with summer time; a stamp
// that no wall clock shows is refused.
func TestKeyOfStamp(t *testing.T) {
	cases := []struct {
		period dated.Period
		zone   string
		at     string // an instant in the period, RFC 3339
	}{
		{dated.Year, "Asia/Shanghai", "2026-12-31T17:00:00Z"},
		{dated.Month, "Asia/Shanghai", "2028-02-29T15:59:59Z"},
		{dated.Day, "Asia/Shanghai", "2026-11-26T16:00:00Z"},
		{dated.Hour, "Europe/Berlin", "2026-10-25T00:30:00Z"}, // 02:30 CEST, the hour that comes round twice
		{dated.Minute, "Asia/Kathmandu", "2026-11-26T00:14:00Z"},
	}
	for _, c := range cases {
		t.Run(string(c.period)+" "+c.zone, func(t *testing.T) {
			f, err := dated.New(dated.Settings{Period: c.period, TimeZone: c.zone})
			if err != nil {
				t.Fatal(err)
			}
			at, _ := time.Parse(time.RFC3339, c.at)
			want, err := f.Of(at)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.KeyOfStamp(want.Stamp)
			if err != nil || got.Stamp != want.Stamp || !got.Start.Equal(want.Start) || !got.End.Equal(want.End) {
				t.Errorf("KeyOfStamp(%d) = %+v, %v; want %+v", want.Stamp, got, err, want)
			}
		})
	}
	berlin, err := dated.New(dated.Settings{Period: dated.Hour, TimeZone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, stamp := range []int64{2026032902, 2026133100, 2026023000, 999912, 1} { // skipped hour, month 13, Feb 30, too short
		if k, err := berlin.KeyOfStamp(stamp); err == nil {
			t.Errorf("KeyOfStamp(%d) = %+v, want an error", stamp, k)
		}
	}
}
