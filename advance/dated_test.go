package advance

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// datedRow is a dated tag's row as a store lists it.
func datedRow(tag string, p dated.Period, zone string, length int, step int64) segment.Tag {
	return segment.Tag{AppTag: tag, Step: step, Start: 1, Format: segment.FormatDated, Length: length,
		FormatSpec: dated.Settings{Period: p, TimeZone: zone}.Spec()}
}

// datedLine is Run's line naming the periods, for a run at now with -by
// (back 0) or -for back, at the default max_clock_skew of 1 s.
func datedLine(now time.Time, back time.Duration) string {
	return fmt.Sprintf("dated tags: the counters of each one's previous period and of every period meeting %s to %s move "+
		"(this machine's clock, 0s from the store's; max_clock_skew 1s)",
		now.Add(-back-2*time.Second).UTC().Format(time.RFC3339), now.Add(62*time.Second).UTC().Format(time.RFC3339))
}

// TestAdvanceDated: a dated tag's counters move (its row's max_id does
// not), for the previous and the current period by this machine's clock
// in the tag's zone, and the next when it begins within the lead; with
// -for, every period of the span, each by the dated estimate; a move is
// clamped at the period's last number; a dry run reads the counters and
// writes nothing; a clock off the store's moves nothing.
func TestAdvanceDated(t *testing.T) {
	// 12:00 UTC is 20:00 in Asia/Shanghai, whose day 20260301 ends at
	// 16:00 UTC.
	beforeMidnight := time.Date(2026, 3, 1, 15, 59, 30, 0, time.UTC)
	estimate := Estimate{For: 2 * time.Hour, MaxStep: 1_000_000, Instances: 1}
	const ord0301 = 20260301
	for _, tc := range []struct {
		name      string
		a         Advance
		now       time.Time          // this machine's clock; zero: testNow
		storeSkew time.Duration      // the store's clock less this machine's
		counters  map[periodOf]int64 // beside ord's 40 of 20260301
		failOn    string
		more      []segment.Tag
		wantLines []string
		wantMoved []string
		wantErr   string
	}{
		{
			name: "-by moves the previous and the current period",
			a:    Advance{Segments: true, By: 500, Tags: []string{"ord"}},
			wantLines: []string{
				datedLine(testNow, 0),
				"tag ord period 20260228: max_id 0 → 500",
				"tag ord period 20260301: max_id 40 → 540",
				"advanced: 1 tag moved (2 periods of dated tags among them), 1000 IDs in all",
			},
			wantMoved: []string{"ord@20260228+500", "ord@20260301+500"},
		},
		{
			name: "and the next one, which begins within the lead",
			a:    Advance{Segments: true, By: 500, Tags: []string{"ord"}},
			now:  beforeMidnight,
			wantLines: []string{
				datedLine(beforeMidnight, 0),
				"tag ord period 20260228: max_id 0 → 500",
				"tag ord period 20260301: max_id 40 → 540",
				"tag ord period 20260302: max_id 0 → 500",
				"advanced: 1 tag moved (3 periods of dated tags among them), 1500 IDs in all",
			},
			wantMoved: []string{"ord@20260228+500", "ord@20260301+500", "ord@20260302+500"},
		},
		{
			// An hour of length 4: 9,999 numbers, a step cap of 99, 6
			// segments of an hour's (not 2 h's) span: 594 each.
			name: "-for moves every period of the span by the estimate",
			a:    Advance{Segments: true, Estimate: estimate, Tags: []string{"hourly"}},
			wantLines: []string{
				estimate.String(),
				estimate.DatedString(),
				datedLine(testNow, 2*time.Hour),
				"tag hourly period 2026030109: max_id 0 → 594",
				"tag hourly period 2026030110: max_id 0 → 594",
				"tag hourly period 2026030111: max_id 0 → 594",
				"tag hourly period 2026030112: max_id 0 → 594",
				"advanced: 1 tag moved (4 periods of dated tags among them), 2376 IDs in all",
			},
			wantMoved: []string{"hourly@2026030109+594", "hourly@2026030110+594", "hourly@2026030111+594", "hourly@2026030112+594"},
		},
		{
			name:     "a move is clamped at the period's last number, and a spent period is left",
			a:        Advance{Segments: true, By: 100, Tags: []string{"ord"}},
			counters: map[periodOf]int64{{"ord", 20260228}: 999_999, {"ord", ord0301}: 999_990},
			wantLines: []string{
				datedLine(testNow, 0),
				"tag ord period 20260228: max_id at its last number, 999999, already: nothing to move",
				"tag ord period 20260301: max_id 999990 → 999999, clamped at 999999, the period's last number: its numbers are spent, " +
					"which is safe (the tag answers period_exhausted until the next period)",
				"advanced: 1 tag moved (2 periods of dated tags among them), 9 IDs in all",
			},
			wantMoved: []string{"ord@20260301+100"},
		},
		{
			name:     "a dry run reads the counters and writes nothing",
			a:        Advance{Segments: true, By: 10, DryRun: true},
			counters: map[periodOf]int64{{"hourly", 2026030112}: 9_995},
			wantLines: []string{
				datedLine(testNow, 0),
				"tag hourly period 2026030111: max_id 0 → 10 (dry run)",
				"tag hourly period 2026030112: max_id 9995 → 9999, clamped at 9999, the period's last number: its numbers are spent, " +
					"which is safe (the tag answers period_exhausted until the next period) (dry run)",
				"tag ord period 20260228: max_id 0 → 10 (dry run)",
				"tag ord period 20260301: max_id 40 → 50 (dry run)",
				"tag order: max_id 1200 → 1210 (dry run)",
				"tag test_business: max_id 0 → 10 (dry run)",
				"dry run, nothing written; would have advanced: 4 tags moved (4 periods of dated tags among them), 54 IDs in all",
			},
		},
		{
			name:      "this machine's clock off the store's moves nothing",
			a:         Advance{Segments: true, By: 10},
			storeSkew: 5 * time.Second,
			wantErr:   "nothing moved: this machine's clock is 5s off the store's, more than max_clock_skew 1s",
		},
		{
			name:      "within a larger max_clock_skew it moves, over a wider window",
			a:         Advance{Segments: true, By: 10, Tags: []string{"ord"}, MaxClockSkew: 10 * time.Second},
			storeSkew: 5 * time.Second,
			wantLines: []string{
				"dated tags: the counters of each one's previous period and of every period meeting 2026-03-01T11:59:40Z to " +
					"2026-03-01T12:01:20Z move (this machine's clock, 5s from the store's; max_clock_skew 10s)",
				"tag ord period 20260228: max_id 0 → 10",
				"tag ord period 20260301: max_id 40 → 50",
				"advanced: 1 tag moved (2 periods of dated tags among them), 20 IDs in all",
			},
			wantMoved: []string{"ord@20260228+10", "ord@20260301+10"},
		},
		{
			name:    "a dated row idalloc cannot serve moves nothing",
			a:       Advance{Segments: true, By: 10},
			more:    []segment.Tag{{AppTag: "bad", Step: 10, Start: 1, Format: segment.FormatDated, Length: 6, FormatSpec: "v1;period=fortnight"}},
			wantErr: `tag "bad": its row holds no format idalloc serves`,
		},
		{
			name:   "a store failing midway says what moved",
			a:      Advance{Segments: true, By: 10},
			failOn: "ord",
			wantLines: []string{
				datedLine(testNow, 0),
				"tag hourly period 2026030111: max_id 0 → 10",
				"tag hourly period 2026030112: max_id 0 → 10",
				"advanced: 1 tag moved (2 periods of dated tags among them), 20 IDs in all",
			},
			wantMoved: []string{"hourly@2026030111+10", "hourly@2026030112+10"},
			wantErr:   `advance period 20260228 of "ord": store down`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = testNow
			}
			counters := map[periodOf]int64{{"ord", ord0301}: 40}
			maps.Copy(counters, tc.counters)
			before := maps.Clone(counters)
			segs := &fakeSegments{failOn: tc.failOn, counters: counters, now: now.Add(tc.storeSkew), rows: append([]segment.Tag{
				datedRow("hourly", dated.Hour, "UTC", 4, 10),
				datedRow("ord", dated.Day, "Asia/Shanghai", 6, 1000),
				{AppTag: "order", MaxID: 1200, Step: 100},
				{AppTag: "test_business", MaxID: 0, Step: 100_000},
			}, tc.more...)}
			var lines []string
			a := tc.a
			a.Now = func() time.Time { return now }
			a.Report = func(line string) { lines = append(lines, line) }
			err := a.Run(t.Context(), segs, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Run error = %v, want one containing %q", err, tc.wantErr)
			}
			if !slices.Equal(lines, tc.wantLines) {
				t.Errorf("output:\n  %s\nwant:\n  %s", strings.Join(lines, "\n  "), strings.Join(tc.wantLines, "\n  "))
			}
			if !slices.Equal(segs.moved, tc.wantMoved) {
				t.Errorf("moved %q, want %q", segs.moved, tc.wantMoved)
			}
			if len(tc.wantMoved) == 0 && !maps.Equal(segs.counters, before) {
				t.Errorf("counters %v, want them as they were, %v", segs.counters, before)
			}
			for _, r := range segs.rows {
				if r.Format == segment.FormatDated && r.MaxID != 0 {
					t.Errorf("%s: row max_id moved to %d: a dated row's counts nothing", r.AppTag, r.MaxID)
				}
			}
		})
	}
}

// TestPeriodKeys: each stamp once, oldest first, whatever summer time does
// to the wall clock, and no more than maxPeriods.
func TestPeriodKeys(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		name     string
		period   dated.Period
		zone     string
		now      string
		back     time.Duration
		want     []int64
		wantLen  int // when want is nil
		wantsCut bool
	}{
		// Berlin falls back at 01:00 UTC: the wall clock reads 02:xx
		// twice, one stamp with one counter.
		{"the hour read twice", dated.Hour, "Europe/Berlin", "2026-10-25T01:30:00Z", 0, []int64{2026102501, 2026102502}, 0, false},
		{"across the hour read twice", dated.Hour, "Europe/Berlin", "2026-10-25T02:30:00Z", 3 * time.Hour,
			[]int64{2026102501, 2026102502, 2026102503}, 0, false}, // from 23:29:58 UTC, 01:29:58 CEST
		// Berlin springs forward at 01:00 UTC: 02:xx is never read.
		{"the skipped hour", dated.Hour, "Europe/Berlin", "2026-03-29T01:00:30Z", 0, []int64{2026032901, 2026032903}, 0, false},
		{"a leap day's month", dated.Month, "UTC", "2028-03-01T00:00:30Z", 0, []int64{202802, 202803}, 0, false},
		{"weeks of minutes", dated.Minute, "UTC", "2026-03-01T12:00:00Z", 30 * 24 * time.Hour, nil, maxPeriods + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := dated.New(dated.Settings{Period: tc.period, TimeZone: tc.zone})
			if err != nil {
				t.Fatal(err)
			}
			a := Advance{By: 1}
			if tc.back > 0 {
				a = Advance{Estimate: Estimate{For: tc.back}}
			}
			now := at(tc.now)
			from, to := a.window(now)
			keys, cut, err := periodKeys(f, now, from, to)
			if err != nil {
				t.Fatal(err)
			}
			var stamps []int64
			for _, k := range keys {
				stamps = append(stamps, k.Stamp)
			}
			if tc.want != nil && !slices.Equal(stamps, tc.want) {
				t.Errorf("stamps %v, want %v", stamps, tc.want)
			}
			// A minute's next one begins within the lead: maxPeriods back
			// from now, and one ahead.
			if tc.want == nil && len(stamps) != tc.wantLen {
				t.Errorf("%d stamps, want %d", len(stamps), tc.wantLen)
			}
			if cut != tc.wantsCut {
				t.Errorf("cut = %v, want %v", cut, tc.wantsCut)
			}
		})
	}
}

// TestAdvanceDatedNeedsPeriods: a store whose counters cannot be moved
// moves nothing when a dated tag is to move, and the others as ever.
func TestAdvanceDatedNeedsPeriods(t *testing.T) {
	fake := &fakeSegments{rows: []segment.Tag{datedRow("ord", dated.Day, "UTC", 6, 10), {AppTag: "order", MaxID: 1200, Step: 100}}}
	segs := struct{ Segments }{fake} // its Tags and AdvanceTag only
	a := Advance{Segments: true, By: 10, Now: func() time.Time { return testNow }}
	if err := a.Run(t.Context(), segs, nil); err == nil || !strings.Contains(err.Error(), `nothing moved: tag "ord" is dated`) {
		t.Errorf("Run = %v, want the dated tag refused", err)
	}
	a.Tags = []string{"order"}
	if err := a.Run(t.Context(), segs, nil); err != nil || !slices.Equal(fake.moved, []string{"order+10"}) {
		t.Errorf("Run -tags order = %v, moving %q; want order moved", err, fake.moved)
	}
}
