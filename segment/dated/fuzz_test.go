package dated_test

import (
	"testing"

	"github.com/idalloc/idalloc/segment/dated"
)

// fuzzFormats are the layouts the fuzz targets try, by index.
var fuzzFormats = []dated.Settings{
	{},
	{Prefix: "ORD", Separator: "-"},
	{Prefix: "ORD"},
	{Separator: "/", Period: dated.Hour, Length: 8, Start: ptr(1000)},
	{Period: dated.Minute, Length: 6},
	{Period: dated.Year, Length: 14, Prefix: "Y", Separator: "."},
	{Period: dated.Month, Length: 1, Start: ptr(9)},
}

func fuzzFormat(tb testing.TB, i uint8) *dated.Format {
	return mustNew(tb, fuzzFormats[int(i)%len(fuzzFormats)])
}

// FuzzParseText: ParseText is strict, so whatever it accepts is exactly
// the text AppendText makes of its result, and for a numeric format the
// number ParseID reads the same.
func FuzzParseText(f *testing.F) {
	for _, s := range []string{"20261126000123", "ORD-20261126-000123", "ORD20261126000123", "2026112613/00001000",
		"202611261345000001", "Y.2026.00000000000001", "2026129", "ORD-20260230-000123", ""} {
		for i := range len(fuzzFormats) {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, s string) {
		fm := fuzzFormat(t, i)
		stamp, seq, err := fm.ParseText(s)
		if err != nil {
			return
		}
		back, err := fm.Text(dated.Key{Stamp: stamp}, seq)
		if err != nil || back != s {
			t.Fatalf("ParseText(%q) = %d, %d, but Text of it = %q, %v", s, stamp, seq, back, err)
		}
		if fm.Numeric() {
			id, err := fm.ID(dated.Key{Stamp: stamp}, seq)
			if err != nil {
				t.Fatalf("ID(%d, %d): %v", stamp, seq, err)
			}
			if st, sq, err := fm.ParseID(id); err != nil || st != stamp || sq != seq {
				t.Fatalf("ParseID(%d) = %d, %d, %v; want %d, %d", id, st, sq, err, stamp, seq)
			}
		}
	})
}

// FuzzParseID: whatever ParseID accepts, ID writes back to the same number.
func FuzzParseID(f *testing.F) {
	for _, id := range []int64{20261126000123, 202611261345000001, 2026110042, 0, -1, 1<<63 - 1} {
		f.Add(uint8(0), id)
		f.Add(uint8(4), id)
		f.Add(uint8(6), id)
	}
	f.Fuzz(func(t *testing.T, i uint8, id int64) {
		fm := fuzzFormat(t, i)
		stamp, seq, err := fm.ParseID(id)
		if err != nil {
			return
		}
		if back, err := fm.ID(dated.Key{Stamp: stamp}, seq); err != nil || back != id {
			t.Fatalf("ParseID(%d) = %d, %d, but ID of it = %d, %v", id, stamp, seq, back, err)
		}
	})
}
