package dated_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment/dated"
)

// TestCompose pins the IDs of each layout, exactly, and parses them back.
func TestCompose(t *testing.T) {
	tests := []struct {
		name  string
		s     dated.Settings
		stamp int64
		seq   int64
		id    int64 // 0: text only
		text  string
	}{
		{"default", dated.Settings{}, 20261126, 123, 20261126000123, "20261126000123"},
		{"first of the day", dated.Settings{}, 20261126, 1, 20261126000001, "20261126000001"},
		{"last of the day", dated.Settings{}, 20261126, 999999, 20261126999999, "20261126999999"},
		{"prefix and separator", dated.Settings{Prefix: "ORD", Separator: "-"}, 20261126, 123, 0, "ORD-20261126-000123"},
		{"prefix only", dated.Settings{Prefix: "ORD"}, 20261126, 123, 0, "ORD20261126000123"},
		{"separator only", dated.Settings{Separator: "-"}, 20261126, 123, 0, "20261126-000123"},
		{"underscore", dated.Settings{Prefix: "inv", Separator: "_"}, 20261126, 7, 0, "inv_20261126_000007"},
		{"slash", dated.Settings{Prefix: "A1", Separator: "/"}, 20261126, 7, 0, "A1/20261126/000007"},
		{"dot", dated.Settings{Separator: "."}, 20261126, 7, 0, "20261126.000007"},
		{"digit prefix", dated.Settings{Prefix: "12"}, 20261126, 7, 0, "1220261126000007"},
		{"year, 14 digits", dated.Settings{Period: dated.Year, Length: 14}, 2026, 1, 202600000000000001, "202600000000000001"},
		{"month", dated.Settings{Period: dated.Month, Length: 4}, 202611, 42, 2026110042, "2026110042"},
		{"hour", dated.Settings{Period: dated.Hour, Length: 3}, 2026112613, 5, 2026112613005, "2026112613005"},
		{"minute, 18 digits", dated.Settings{Period: dated.Minute}, 202611261345, 1, 202611261345000001, "202611261345000001"},
		{"largest", dated.Settings{Period: dated.Minute}, 999912312359, 999999, 999912312359999999, "999912312359999999"},
		{"length 1", dated.Settings{Length: 1}, 20261126, 9, 202611269, "202611269"},
		{"start 1000", dated.Settings{Start: ptr(1000)}, 20261126, 1000, 20261126001000, "20261126001000"},
		{"longest text", dated.Settings{Period: dated.Minute, Prefix: "ABCDEFGHIJKL", Separator: "-"}, 202611261345, 12,
			0, "ABCDEFGHIJKL-202611261345-000012"},
		{"leap day", dated.Settings{Prefix: "X", Separator: "-"}, 20280229, 1, 0, "X-20280229-000001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustNew(t, tc.s)
			k := dated.Key{Stamp: tc.stamp}
			id, err := f.ID(k, tc.seq)
			if tc.id == 0 {
				if f.Numeric() || !errors.Is(err, dated.ErrNotNumeric) {
					t.Errorf("ID(%d, %d) = %d, %v; want ErrNotNumeric (text only)", tc.stamp, tc.seq, id, err)
				}
				if _, _, err := f.ParseID(id); !errors.Is(err, dated.ErrInvalidID) {
					t.Errorf("ParseID on a text format: %v, want ErrInvalidID", err)
				}
			} else {
				if err != nil || id != tc.id {
					t.Errorf("ID(%d, %d) = %d, %v; want %d", tc.stamp, tc.seq, id, err, tc.id)
				}
				if stamp, seq, err := f.ParseID(id); err != nil || stamp != tc.stamp || seq != tc.seq {
					t.Errorf("ParseID(%d) = %d, %d, %v; want %d, %d", id, stamp, seq, err, tc.stamp, tc.seq)
				}
				if got := strconv.FormatInt(id, 10); got != tc.text {
					t.Errorf("numeric ID %s and text %s differ", got, tc.text)
				}
			}
			text, err := f.Text(k, tc.seq)
			if err != nil || text != tc.text {
				t.Errorf("Text(%d, %d) = %q, %v; want %q", tc.stamp, tc.seq, text, err, tc.text)
			}
			if len(text) > dated.MaxTextLength {
				t.Errorf("%q is longer than MaxTextLength %d", text, dated.MaxTextLength)
			}
			buf := []byte("id=")
			if b, err := f.AppendText(buf, k, tc.seq); err != nil || string(b) != "id="+tc.text {
				t.Errorf("AppendText(%q, …) = %q, %v; want %q", buf, b, err, "id="+tc.text)
			}
			if stamp, seq, err := f.ParseText(tc.text); err != nil || stamp != tc.stamp || seq != tc.seq {
				t.Errorf("ParseText(%q) = %d, %d, %v; want %d, %d", tc.text, stamp, seq, err, tc.stamp, tc.seq)
			}
		})
	}
}

// TestComposeRefuses: numbers the format cannot have are never written.
func TestComposeRefuses(t *testing.T) {
	day := mustNew(t, dated.Settings{Start: ptr(10)})
	ord := mustNew(t, dated.Settings{Prefix: "ORD", Separator: "-", Start: ptr(10)})
	for _, c := range []struct {
		stamp, seq int64
	}{
		{20261126, 9},          // below start
		{20261126, 0},          // below start
		{20261126, 1000000},    // beyond 6 digits
		{20261126, -1},         // negative
		{2026112, 10},          // 7 digits
		{202611260, 10},        // 9 digits
		{9999999, 10},          // 7 digits
		{-20261126, 10},        // negative stamp
		{100000000000, 999999}, // minute stamp on a day format
	} {
		k := dated.Key{Stamp: c.stamp}
		if id, err := day.ID(k, c.seq); !errors.Is(err, dated.ErrSequenceRange) {
			t.Errorf("ID(%d, %d) = %d, %v; want ErrSequenceRange", c.stamp, c.seq, id, err)
		}
		for _, f := range []*dated.Format{day, ord} {
			dst := []byte("x")
			if b, err := f.AppendText(dst, k, c.seq); !errors.Is(err, dated.ErrSequenceRange) || string(b) != "x" {
				t.Errorf("AppendText(%d, %d) = %q, %v; want x unchanged and ErrSequenceRange", c.stamp, c.seq, b, err)
			}
			if s, err := f.Text(k, c.seq); !errors.Is(err, dated.ErrSequenceRange) || s != "" {
				t.Errorf("Text(%d, %d) = %q, %v; want ErrSequenceRange", c.stamp, c.seq, s, err)
			}
		}
	}
}

// TestParseRefuses: ParseText and ParseID accept only what the format
// writes.
func TestParseRefuses(t *testing.T) {
	ord := mustNew(t, dated.Settings{Prefix: "ORD", Separator: "-", Start: ptr(10)})
	num := mustNew(t, dated.Settings{Start: ptr(10)})
	hour := mustNew(t, dated.Settings{Period: dated.Hour, Length: 2})
	minute := mustNew(t, dated.Settings{Period: dated.Minute, Length: 2})
	tests := []struct {
		f    *dated.Format
		text string
	}{
		{ord, ""},
		{ord, "ORD"},
		{ord, "ord-20261126-000123"},
		{ord, "ORX-20261126-000123"},
		{ord, "ORD_20261126-000123"},
		{ord, "ORD-20261126_000123"},
		{ord, "ORD20261126000123"},
		{ord, "ORD-20261126-0000123"},
		{ord, "ORD-20261126-00123"},
		{ord, "ORD-2026112-6000123"},
		{ord, "ORD-+0261126-000123"},
		{ord, "ORD-20261126-+00123"},
		{ord, "ORD-20261126-00012a"},
		{ord, "ORD-20261126-000009"},  // below start
		{ord, "ORD-20261326-000123"},  // month 13
		{ord, "ORD-20260230-000123"},  // 30 February
		{ord, "ORD-20270229-000123"},  // not a leap year
		{ord, "ORD-20261100-000123"},  // day 0
		{ord, "ORD-09991231-000123"},  // year 999
		{ord, "ORD-20261126-000123 "}, // trailing space
		{ord, " ORD-20261126-000123"},
		{num, "20261126000009"},
		{num, "2026112600012"},
		{num, "-20261126000123"},
		{num, "20261126\n00123"},
		{hour, "202611262400"},     // hour 24
		{minute, "20261126236000"}, // minute 60
	}
	for _, tc := range tests {
		if stamp, seq, err := tc.f.ParseText(tc.text); !errors.Is(err, dated.ErrInvalidID) || errs.KindOf(err) != errs.BadRequest {
			t.Errorf("ParseText(%q) = %d, %d, %v; want ErrInvalidID", tc.text, stamp, seq, err)
		}
	}
	for _, id := range []int64{0, -1, 20261126000009, 2026112600012, 202611261000123, 20261326000123, 9991231000123, 1<<63 - 1} {
		if stamp, seq, err := num.ParseID(id); !errors.Is(err, dated.ErrInvalidID) {
			t.Errorf("ParseID(%d) = %d, %d, %v; want ErrInvalidID", id, stamp, seq, err)
		}
	}
}

// TestPeriodExhaustedThenNext: a period issues Start to MaxSeq; the number
// after is refused; the next period, Of(k.End), starts again at Start
// under another stamp.
func TestPeriodExhaustedThenNext(t *testing.T) {
	f := mustNew(t, dated.Settings{Period: dated.Minute, Length: 2, Start: ptr(5), TimeZone: "Asia/Shanghai"})
	k, err := f.Of(at(2026, 11, 26, 15, 59, 30))
	if err != nil {
		t.Fatal(err)
	}
	issued := map[int64]bool{}
	for seq := f.Start(); seq <= f.MaxSeq(); seq++ {
		id, err := f.ID(k, seq)
		if err != nil || issued[id] {
			t.Fatalf("ID(%d, %d) = %d, %v (issued before: %t)", k.Stamp, seq, id, err, issued[id])
		}
		issued[id] = true
	}
	if len(issued) != 95 {
		t.Errorf("the period issued %d numbers, want 95 (5 to 99)", len(issued))
	}
	if id, err := f.ID(k, f.MaxSeq()+1); !errors.Is(err, dated.ErrSequenceRange) {
		t.Errorf("ID after the last = %d, %v; want ErrSequenceRange (the caller answers ErrPeriodExhausted)", id, err)
	}
	next, err := f.Of(k.End)
	if err != nil {
		t.Fatal(err)
	}
	id, err := f.ID(next, f.Start())
	if err != nil || id != 20261127000005 || issued[id] || !next.Start.Equal(k.End) {
		t.Errorf("first of the next period %+v: %d, %v; want 20261127000005", next, id, err)
	}
	if errs.KindOf(dated.ErrPeriodExhausted) != errs.PeriodExhausted {
		t.Errorf("ErrPeriodExhausted is %s, want %s", errs.KindOf(dated.ErrPeriodExhausted), errs.PeriodExhausted)
	}
}

// TestComposeAllocations: numeric IDs and text into a buffer with room
// cost no allocation; Text one, the string.
func TestComposeAllocations(t *testing.T) {
	num := mustNew(t, dated.Settings{})
	ord := mustNew(t, dated.Settings{Prefix: "ORD", Separator: "-"})
	k := dated.Key{Stamp: 20261126}
	buf := make([]byte, 0, dated.MaxTextLength)
	var err error
	for _, c := range []struct {
		name string
		want float64
		fn   func()
	}{
		{"ID", 0, func() { _, err = num.ID(k, 123) }},
		{"AppendText", 0, func() { _, err = ord.AppendText(buf[:0], k, 123) }},
		{"ParseID", 0, func() { _, _, err = num.ParseID(20261126000123) }},
		{"ParseText", 0, func() { _, _, err = ord.ParseText("ORD-20261126-000123") }},
		{"Text", 1, func() { _, err = ord.Text(k, 123) }},
	} {
		if got := testing.AllocsPerRun(1000, c.fn); got != c.want || err != nil {
			t.Errorf("%s: %v allocations, error %v; want %v", c.name, got, err, c.want)
		}
	}
}
