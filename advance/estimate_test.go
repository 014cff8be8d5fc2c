package advance

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		e            Estimate
		step         int64
		wantSegments int64
		wantBy       int64
		wantErr      error
	}{
		{"2h at the default cap", Estimate{For: 2 * time.Hour, MaxStep: 1_000_000, Instances: 1}, 1000, 10, 10_000_000, nil},
		{"a whole number of segments", Estimate{For: 15 * time.Minute, MaxStep: 1000, Instances: 1}, 10, 3, 3000, nil},
		{"a part segment counts whole", Estimate{For: 15*time.Minute + time.Millisecond, MaxStep: 1000, Instances: 1}, 10, 4, 4000, nil},
		{"a millisecond is still two segments more", Estimate{For: time.Millisecond, MaxStep: 1000, Instances: 1}, 10, 3, 3000, nil},
		{"a row step above the cap counts", Estimate{For: time.Hour, MaxStep: 1000, Instances: 1}, 5000, 6, 30_000, nil},
		{"per instance", Estimate{For: time.Hour, MaxStep: 1000, Instances: 3}, 10, 6, 18_000, nil},
		{"too large for an int64", Estimate{For: time.Hour, MaxStep: math.MaxInt64 / 4, Instances: 1}, 10, 6, 0, errEstimateTooLarge},
		{"too large with the instances", Estimate{For: time.Hour, MaxStep: math.MaxInt64 / 6, Instances: 2}, 10, 6, 0, errEstimateTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.Segments(); got != tc.wantSegments {
				t.Errorf("Segments() = %d, want %d", got, tc.wantSegments)
			}
			by, err := tc.e.By(tc.step)
			if by != tc.wantBy || !errors.Is(err, tc.wantErr) {
				t.Errorf("By(%d) = %d, %v; want %d, %v", tc.step, by, err, tc.wantBy, tc.wantErr)
			}
			if err == nil && by < 2*tc.step {
				t.Errorf("By(%d) = %d, below two of the row's steps", tc.step, by)
			}
		})
	}
}

func TestEstimateString(t *testing.T) {
	got := Estimate{For: 2 * time.Hour, MaxStep: 1_000_000, Instances: 3}.String()
	want := "estimate for 2h0m0s: each tag moves by max(segment.max_step 1000000, its step) × 10 " +
		"(2h0m0s in 15m0s segments, rounded up, + 2 held at the end) × 3 instance(s)"
	if got != want {
		t.Errorf("String() =\n  %s\nwant\n  %s", got, want)
	}
}

// TestEstimateByPeriod: a dated period's move is capped as the dated
// step is (1/100 of a period's numbers, unless the row's step is
// larger), over a span no longer than the period.
func TestEstimateByPeriod(t *testing.T) {
	e2h := Estimate{For: 2 * time.Hour, MaxStep: 1_000_000, Instances: 1}
	for _, tc := range []struct {
		name    string
		e       Estimate
		step    int64
		numbers int64
		length  time.Duration
		want    int64
		wantErr error
	}{
		// 999,999 numbers: a cap of 9,999, 10 segments in 2h of a day.
		{"a day of length 6, 2h of it", e2h, 1000, 999_999, 24 * time.Hour, 99_990, nil},
		{"an hour: its length, not 2h", e2h, 10, 9_999, time.Hour, 99 * 6, nil},
		{"the row's step above the cap", e2h, 50_000, 999_999, 24 * time.Hour, 500_000, nil},
		{"max_step below the cap", Estimate{For: 2 * time.Hour, MaxStep: 100, Instances: 3}, 10, 999_999, 24 * time.Hour, 100 * 10 * 3, nil},
		{"a period of 50 numbers: a cap of 1", e2h, 1, 50, 24 * time.Hour, 10, nil},
		{"too large for an int64", Estimate{For: time.Hour, MaxStep: 1, Instances: math.MaxInt / 2}, math.MaxInt64 / 4, 10, time.Hour, 0, errEstimateTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.e.ByPeriod(tc.step, tc.numbers, tc.length)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("ByPeriod(%d, %d, %s) = %d, %v; want %d, %v", tc.step, tc.numbers, tc.length, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
