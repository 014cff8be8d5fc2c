package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

func formatCases() []testCase {
	return []testCase{
		{"formats/create keeps format, length and key, Tags returns them", testFormatsRoundTrip},
		{"formats/fetch and give back count the sequence of every format", testFormatsFetch},
		{"formats/rows no allocator can serve are refused and change nothing", testFormatsInvalid},
		{"start/create records the first ID of every format, kept through fetches and give-backs", testStartRoundTrip},
	}
}

// testKey is a scrambled key holding every kind of byte a column might
// mangle: NUL, high bytes, quote and backslash.
func testKey(size int) []byte {
	k := make([]byte, size)
	for i := range k {
		k[i] = byte(i*37 + 11)
	}
	k[0], k[1], k[2], k[3] = 0, 0xff, '\'', '\\'
	return k
}

// tagsByName lists st's tags by app_tag.
func tagsByName(t *testing.T, st store.Store) map[string]segment.Tag {
	t.Helper()
	tags, err := st.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	m := make(map[string]segment.Tag, len(tags))
	for _, tg := range tags {
		m[tg.AppTag] = tg
	}
	return m
}

func testFormatsRoundTrip(t *testing.T, db DB) {
	st := db.Open(t)
	key32, key16 := testKey(32), testKey(16)
	created := []segment.Tag{
		{AppTag: "plain", Step: 10},
		{AppTag: "seq", Step: 10, Format: segment.FormatSequential},
		{AppTag: "fixed", Step: 10, Start: 10_000_000, Format: segment.FormatFixedLength, Length: 8},
		{AppTag: "fixed18", Step: 10, Start: 100_000_000_000_000_000, Format: segment.FormatFixedLength, Length: 18},
		{AppTag: "scr", Step: 10, Format: segment.FormatScrambled, Length: 10, FormatKey: key32},
		{AppTag: "scr16", Step: 10, Format: segment.FormatScrambled, Length: 6, FormatKey: key16},
	}
	for _, tg := range created {
		mustCreate(t, st, tg)
	}
	want := map[string]segment.Tag{
		"plain":   {Format: segment.FormatSequential},
		"seq":     {Format: segment.FormatSequential},
		"fixed":   {Format: segment.FormatFixedLength, Length: 8, MaxID: 9_999_999},
		"fixed18": {Format: segment.FormatFixedLength, Length: 18, MaxID: 99_999_999_999_999_999},
		"scr":     {Format: segment.FormatScrambled, Length: 10, FormatKey: key32},
		"scr16":   {Format: segment.FormatScrambled, Length: 6, FormatKey: key16},
		seeded:    {Format: segment.FormatSequential, MaxID: 0},
	}
	// A second handle reads what the first wrote, from the database.
	for _, h := range []store.Store{st, db.Open(t)} {
		got := tagsByName(t, h)
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				t.Errorf("Tags: no row %q", name)
				continue
			}
			if g.Format != w.Format || g.Length != w.Length || !bytes.Equal(g.FormatKey, w.FormatKey) || g.MaxID != w.MaxID {
				t.Errorf("Tags[%q] = format %q, length %d, key %x, max_id %d; want %q, %d, %x, %d",
					name, g.Format, g.Length, g.FormatKey, g.MaxID, w.Format, w.Length, w.FormatKey, w.MaxID)
			}
			if len(w.FormatKey) == 0 && g.FormatKey != nil {
				t.Errorf("Tags[%q].FormatKey = %x, want nil (NULL)", name, g.FormatKey)
			}
		}
	}
}

func testFormatsFetch(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "scr", Step: 100, Format: segment.FormatScrambled, Length: 6, FormatKey: testKey(32)})
	mustCreate(t, st, segment.Tag{AppTag: "fixed", Step: 100, Start: 1000, Format: segment.FormatFixedLength, Length: 4})
	if f := mustFetch(t, st, "scr", 0); f.MaxID != 100 || f.Size != 100 {
		t.Errorf("Fetch(scr) = %+v, want the sequence (0, 100]", f)
	}
	if f := mustFetch(t, st, "fixed", 0); f.MaxID != 1099 || f.Size != 100 {
		t.Errorf("Fetch(fixed) = %+v, want (999, 1099]", f)
	}
	if ok, err := st.GiveBack(t.Context(), "scr", 100, 40); err != nil || !ok {
		t.Fatalf("GiveBack(scr, 100, 40) = %v, %v; want true", ok, err)
	}
	if f := mustFetch(t, st, "scr", 0); f.MaxID != 140 {
		t.Errorf("Fetch(scr) after give-back = %+v, want max_id 140", f)
	}
	if g := tagsByName(t, st)["scr"]; g.Format != segment.FormatScrambled || g.Length != 6 || !bytes.Equal(g.FormatKey, testKey(32)) {
		t.Errorf("after fetches Tags[scr] = %+v, want its format, length and key unchanged", g)
	}
}

func testFormatsInvalid(t *testing.T, db DB) {
	st := db.Open(t)
	tests := []struct {
		name string
		tag  segment.Tag
		want error // nil: any error
	}{
		{"unknown format", segment.Tag{Format: "hex"}, segment.ErrInvalidFormat},
		{"sequential with a length", segment.Tag{Format: segment.FormatSequential, Length: 6}, segment.ErrInvalidLength},
		{"no format with a length", segment.Tag{Length: 6}, segment.ErrInvalidLength},
		{"fixed_length of 0 digits", segment.Tag{Format: segment.FormatFixedLength}, segment.ErrInvalidLength},
		{"fixed_length of 19 digits", segment.Tag{Format: segment.FormatFixedLength, Length: 19}, segment.ErrInvalidLength},
		{"scrambled of 5 digits", segment.Tag{Format: segment.FormatScrambled, Length: 5, FormatKey: testKey(32)}, segment.ErrInvalidLength},
		{"scrambled without a key", segment.Tag{Format: segment.FormatScrambled, Length: 8}, nil},
		{"scrambled with a 20-byte key", segment.Tag{Format: segment.FormatScrambled, Length: 8, FormatKey: testKey(20)}, nil},
		{"fixed_length with a key", segment.Tag{Format: segment.FormatFixedLength, Length: 8, FormatKey: testKey(32)}, nil},
	}
	for _, tt := range tests {
		tg := tt.tag
		tg.AppTag, tg.Step = "bad", 10
		err := st.CreateTag(t.Context(), tg)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: CreateTag = %v, want %v", tt.name, err, tt.want)
		}
	}
	if tags := tagsByName(t, st); len(tags) != 1 {
		t.Errorf("after refused creates Tags = %+v, want only %s", tags, seeded)
	}
}

func testStartRoundTrip(t *testing.T, db DB) {
	st := db.Open(t)
	created := []segment.Tag{
		{AppTag: "plain", Step: 10},
		{AppTag: "seq", Step: 10, Start: 500},
		{AppTag: "big", Step: 10, Start: segment.MaxUsableID},
		{AppTag: "fixed", Step: 10, Start: 12_345_678, Format: segment.FormatFixedLength, Length: 8},
		{AppTag: "scr", Step: 10, Start: 1, Format: segment.FormatScrambled, Length: 8, FormatKey: testKey(32)},
	}
	for _, tg := range created {
		mustCreate(t, st, tg)
	}
	// The seeded row has start 1, and a start 0 is stored as the 1 it means.
	want := map[string]int64{seeded: 1, "plain": 1, "seq": 500, "big": segment.MaxUsableID, "fixed": 12_345_678, "scr": 1}
	check := func(when string, h store.Store) {
		t.Helper()
		got := tagsByName(t, h)
		for name, w := range want {
			if g := got[name]; g.Start != w {
				t.Errorf("%s: Tags[%q].Start = %d, want %d", when, name, g.Start, w)
			}
		}
	}
	check("after create", st)

	// start is the tag's first ID, not where the row is now.
	if f := mustFetch(t, st, "seq", 0); f.MaxID != 509 {
		t.Fatalf("Fetch(seq) = %+v, want (499, 509]", f)
	}
	mustFetch(t, st, "plain", 0)
	if ok, err := st.GiveBack(t.Context(), "plain", 10, 4); err != nil || !ok {
		t.Fatalf("GiveBack(plain, 10, 4) = %v, %v; want true", ok, err)
	}
	check("after fetches and a give-back", st)
	check("from a second handle", db.Open(t))
}
