package advance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// fakeSegments is a Segments in memory; AdvanceTag and AdvancePeriod of
// failOn fail. Its clock reads now, or testNow when that is zero.
type fakeSegments struct {
	rows     []segment.Tag
	counters map[periodOf]int64
	moved    []string // "tag+by", "tag@stamp+by", in order
	failOn   string
	now      time.Time
}

func (f *fakeSegments) AdvancePeriod(_ context.Context, tag string, stamp, start, limit, by int64) (int64, int64, error) {
	if tag == f.failOn {
		return 0, 0, fmt.Errorf("advance period %d of %q: store down", stamp, tag)
	}
	if f.counters == nil {
		f.counters = map[periodOf]int64{}
	}
	k := periodOf{tag, stamp}
	from, ok := f.counters[k]
	if !ok {
		from = start - 1
	}
	if from >= limit {
		return 0, 0, fmt.Errorf("advance period %d of %q: %w", stamp, tag, segment.ErrExhausted)
	}
	f.counters[k] = from + min(by, limit-from)
	f.moved = append(f.moved, fmt.Sprintf("%s@%d+%d", tag, stamp, by))
	return from, f.counters[k], nil
}

func (f *fakeSegments) PeriodCounters(context.Context) ([]PeriodCounter, error) {
	var out []PeriodCounter
	for k, v := range f.counters {
		out = append(out, PeriodCounter{AppTag: k.tag, Stamp: k.stamp, MaxID: v})
	}
	return out, nil
}

func (f *fakeSegments) Now(context.Context) (time.Time, error) {
	if f.now.IsZero() {
		return testNow, nil
	}
	return f.now, nil
}

func (f *fakeSegments) Tags(context.Context) ([]segment.Tag, error) { return slices.Clone(f.rows), nil }

func (f *fakeSegments) AdvanceTag(_ context.Context, tag string, by int64) (int64, int64, error) {
	i := slices.IndexFunc(f.rows, func(t segment.Tag) bool { return t.AppTag == tag })
	if i < 0 || tag == f.failOn {
		return 0, 0, fmt.Errorf("advance segment %q: store down", tag)
	}
	from := f.rows[i].MaxID
	f.rows[i].MaxID += by
	f.moved = append(f.moved, fmt.Sprintf("%s+%d", tag, by))
	return from, f.rows[i].MaxID, nil
}

// fakeLease is one worker ID's history in fakeLeases.
type fakeLease struct {
	cluster  string
	workerID int64
	lastMS   int64
}

// fakeLeases is a Leases in memory.
type fakeLeases struct{ rows []fakeLease }

func (f *fakeLeases) AdvanceLeases(_ context.Context, toMS int64, dryRun bool, each func(string, int64, int64, int64)) error {
	for i, r := range f.rows {
		to := max(r.lastMS, toMS)
		if !dryRun {
			f.rows[i].lastMS = to
		}
		each(r.cluster, r.workerID, r.lastMS, to)
	}
	return nil
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestAdvanceRun(t *testing.T) {
	nowMS := testNow.UnixMilli()
	floor31s := nowMS + 31_000 // LeaseMin below
	floor2h := nowMS + 2*time.Hour.Milliseconds()
	estimate := Estimate{For: 2 * time.Hour, MaxStep: 1_000_000, Instances: 1}
	for _, tc := range []struct {
		name      string
		a         Advance
		failOn    string
		more      []segment.Tag // rows beside order and test_business
		wantLines []string
		wantMoved []string
		wantErr   string // "" for none
		wantLeft  bool   // the leases are as they were
	}{
		{
			name: "-by moves every tag, the leases to now + lease TTL + drift",
			a:    Advance{Segments: true, Leases: true, By: 5_000_000},
			wantLines: []string{
				"tag order: max_id 1200 → 5001200",
				"tag test_business: max_id 0 → 5000000",
				fmt.Sprintf("lease cluster default worker 3: last_timestamp_ms %d → %d", nowMS-1000, floor31s),
				fmt.Sprintf("lease cluster default worker 4: last_timestamp_ms %d, already at or past %d", nowMS+time.Hour.Milliseconds(), floor31s),
				fmt.Sprintf("advanced: 2 tags moved, 10000000 IDs in all; 1 of 2 worker leases raised to last_timestamp_ms %d (2026-03-01T12:00:31Z, now + 31s)", floor31s),
			},
			wantMoved: []string{"order+5000000", "test_business+5000000"},
		},
		{
			name: "-tags moves only those",
			a:    Advance{Segments: true, By: 7, Tags: []string{"order"}},
			wantLines: []string{
				"tag order: max_id 1200 → 1207",
				"advanced: 1 tag moved, 7 IDs in all",
			},
			wantMoved: []string{"order+7"},
			wantLeft:  true,
		},
		{
			name: "-for estimates each tag, and the leases move by it",
			a:    Advance{Segments: true, Leases: true, Estimate: estimate},
			wantLines: []string{
				estimate.String(),
				"tag order: max_id 1200 → 10001200",
				"tag test_business: max_id 0 → 10000000",
				fmt.Sprintf("lease cluster default worker 3: last_timestamp_ms %d → %d", nowMS-1000, floor2h),
				fmt.Sprintf("lease cluster default worker 4: last_timestamp_ms %d → %d", nowMS+time.Hour.Milliseconds(), floor2h),
				fmt.Sprintf("advanced: 2 tags moved, 20000000 IDs in all; 2 of 2 worker leases raised to last_timestamp_ms %d (2026-03-01T14:00:00Z, now + 2h0m0s)", floor2h),
			},
			wantMoved: []string{"order+10000000", "test_business+10000000"},
		},
		{
			name: "a dry run writes nothing",
			a:    Advance{Segments: true, Leases: true, By: 10, DryRun: true, Tags: []string{"test_business"}},
			wantLines: []string{
				"tag test_business: max_id 0 → 10 (dry run)",
				fmt.Sprintf("lease cluster default worker 3: last_timestamp_ms %d → %d (dry run)", nowMS-1000, floor31s),
				fmt.Sprintf("lease cluster default worker 4: last_timestamp_ms %d, already at or past %d (dry run)", nowMS+time.Hour.Milliseconds(), floor31s),
				fmt.Sprintf("dry run, nothing written; would have advanced: 1 tag moved, 10 IDs in all; 1 of 2 worker leases raised to last_timestamp_ms %d (2026-03-01T12:00:31Z, now + 31s)", floor31s),
			},
			wantLeft: true,
		},
		{
			name:     "an unknown tag moves nothing",
			a:        Advance{Segments: true, Leases: true, By: 10, Tags: []string{"order", "nope", "gone"}},
			wantErr:  `nothing moved: -tags: no tag "nope" in the store` + "\n" + `-tags: no tag "gone" in the store`,
			wantLeft: true,
		},
		{
			name:     "a move past a fixed_length tag's last number moves nothing",
			a:        Advance{Segments: true, Leases: true, By: 1000},
			more:     []segment.Tag{{AppTag: "fix", MaxID: 99_999_500, Step: 100, Format: segment.FormatFixedLength, Length: 8}},
			wantErr:  `tag "fix": max_id 99999500 + 1000 passes 99999999, the last number of its format fixed_length(8)`,
			wantLeft: true,
		},
		{
			name: "in a region, -by counts its IDs, each one number in region.count",
			a:    Advance{Segments: true, By: 10, Region: segment.Region{Count: 2, ID: 1}},
			wantLines: []string{
				"region 1 of 2: each tag's max_id moves by 2 × the count, the region's IDs being one number in 2",
				"tag order: max_id 1200 → 1220",
				"tag test_business: max_id 0 → 20",
				"advanced: 2 tags moved, 20 IDs in all",
			},
			wantMoved: []string{"order+20", "test_business+20"},
			wantLeft:  true,
		},
		{
			name: "in a region, -for's estimate counts its IDs",
			a:    Advance{Segments: true, Estimate: estimate, Tags: []string{"order"}, Region: segment.Region{Count: 3, ID: 0}},
			wantLines: []string{
				estimate.String(),
				"region 0 of 3: each tag's max_id moves by 3 × the count, the region's IDs being one number in 3",
				"tag order: max_id 1200 → 30001200",
				"advanced: 1 tag moved, 10000000 IDs in all",
			},
			wantMoved: []string{"order+30000000"},
			wantLeft:  true,
		},
		{
			name:     "in a region, a move past a fixed_length tag's last number moves nothing",
			a:        Advance{Segments: true, By: 300, Region: segment.Region{Count: 2}},
			more:     []segment.Tag{{AppTag: "fix", MaxID: 99_999_500, Step: 100, Format: segment.FormatFixedLength, Length: 8}},
			wantErr:  `tag "fix": max_id 99999500 + 600 passes 99999999`,
			wantLeft: true,
		},
		{
			name: "-only leases",
			a:    Advance{Leases: true, LeaseFor: time.Minute},
			wantLines: []string{
				fmt.Sprintf("lease cluster default worker 3: last_timestamp_ms %d → %d", nowMS-1000, nowMS+60_000),
				fmt.Sprintf("lease cluster default worker 4: last_timestamp_ms %d, already at or past %d", nowMS+time.Hour.Milliseconds(), nowMS+60_000),
				fmt.Sprintf("advanced: 1 of 2 worker leases raised to last_timestamp_ms %d (2026-03-01T12:01:00Z, now + 1m0s)", nowMS+60_000),
			},
		},
		{
			name:   "a store failing midway says what moved",
			a:      Advance{Segments: true, Leases: true, By: 10},
			failOn: "test_business",
			wantLines: []string{
				"tag order: max_id 1200 → 1210",
				"advanced: 1 tag moved, 10 IDs in all; worker leases not reached",
			},
			wantMoved: []string{"order+10"},
			wantErr:   `advance segment "test_business": store down`,
			wantLeft:  true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs := &fakeSegments{failOn: tc.failOn, rows: []segment.Tag{
				{AppTag: "order", MaxID: 1200, Step: 100},
				{AppTag: "test_business", MaxID: 0, Step: 100_000},
			}}
			segs.rows = append(segs.rows, tc.more...)
			leases := &fakeLeases{rows: []fakeLease{
				{"default", 3, nowMS - 1000},
				{"default", 4, nowMS + time.Hour.Milliseconds()},
			}}
			before := slices.Clone(leases.rows)
			var lines []string
			a := tc.a
			a.LeaseMin = 31 * time.Second
			a.Now = func() time.Time { return testNow }
			a.Report = func(line string) { lines = append(lines, line) }
			err := a.Run(t.Context(), segs, leases)
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
			if left := slices.Equal(leases.rows, before); left != tc.wantLeft {
				t.Errorf("leases left as they were = %v, want %v (now %v)", left, tc.wantLeft, leases.rows)
			}
		})
	}
}

func TestAdvanceCheck(t *testing.T) {
	estimate := Estimate{For: time.Hour, MaxStep: 1000, Instances: 1}
	for _, tc := range []struct {
		name    string
		a       Advance
		wantErr string // "" for none
	}{
		{"-by", Advance{Segments: true, Leases: true, By: 1, LeaseMin: time.Second}, ""},
		{"-for", Advance{Segments: true, Leases: true, Estimate: estimate}, ""},
		{"leases alone with -lease-for", Advance{Leases: true, LeaseFor: time.Second}, ""},
		{"nothing to move", Advance{}, "nothing to advance"},
		{"-by and -for", Advance{Segments: true, By: 1, Estimate: estimate}, "-by and -for both given"},
		{"neither -by nor -for", Advance{Segments: true}, "give -by COUNT or -for DURATION"},
		{"negative -by", Advance{Segments: true, By: -1}, "-by -1 is negative"},
		{"negative -for", Advance{Segments: true, Estimate: Estimate{For: -time.Hour, MaxStep: 1, Instances: 1}}, "-for -1h0m0s must be positive"},
		{"no instance", Advance{Segments: true, Estimate: Estimate{For: time.Hour, MaxStep: 1}}, "-instances 0 must be at least 1"},
		{"no max_step", Advance{Segments: true, Estimate: Estimate{For: time.Hour, Instances: 1}}, "segment.max_step 0 must be at least 1"},
		{"an invalid tag", Advance{Segments: true, By: 1, Tags: []string{"a b"}}, `-tags: "a b" is not a tag name`},
		{"-lease-for below the least", Advance{Leases: true, LeaseFor: time.Second, LeaseMin: 31 * time.Second}, "-lease-for 1s is below 31s"},
		{"negative -lease-for", Advance{Leases: true, LeaseFor: -time.Second}, "-lease-for -1s is negative"},
		{"leases with no duration at all", Advance{Leases: true}, "give -lease-for or -for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.a.Check()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Check error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestAdvanceRunChecksFirst: a refused Advance touches no store.
func TestAdvanceRunChecksFirst(t *testing.T) {
	err := Advance{Segments: true}.Run(t.Context(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "give -by") {
		t.Errorf("Run of an unchecked Advance = %v, want the check's refusal", err)
	}
	err = Advance{Segments: true, By: 1}.Run(t.Context(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no store") {
		t.Errorf("Run with no store = %v, want a refusal", err)
	}
}
