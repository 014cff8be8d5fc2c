package segment_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// TestCheckNewTagFormats pins each format rule of docs/api.md §7 to its words
// and the start it stores.
func TestCheckNewTagFormats(t *testing.T) {
	const (
		fixed     = segment.FormatFixedLength
		scrambled = segment.FormatScrambled
	)
	tests := []struct {
		name      string
		tag       segment.NewTag
		wantStart int64  // when valid
		wantMsg   string // when refused
		wantIs    error
	}{
		{"sequential by default", segment.NewTag{}, 1, "", nil},
		{"sequential start kept", segment.NewTag{Format: segment.FormatSequential, Start: new(int64(42))}, 42, "", nil},
		{"sequential with a length", segment.NewTag{Length: 6}, 0,
			"invalid length: must be absent (or 0) for format sequential; send format fixed_length or scrambled for IDs of a fixed number of digits",
			segment.ErrInvalidLength},
		{"unknown format", segment.NewTag{Format: "random", Length: 6}, 0,
			"invalid format: must be sequential, fixed_length, scrambled or dated", segment.ErrInvalidFormat},
		{"format in capitals", segment.NewTag{Format: "SCRAMBLED", Length: 6}, 0,
			"invalid format: must be sequential, fixed_length, scrambled or dated", segment.ErrInvalidFormat},

		{"fixed_length starts at 10^(length-1)", segment.NewTag{Format: fixed, Length: 6}, 100_000, "", nil},
		{"fixed_length raises a small start", segment.NewTag{Format: fixed, Length: 6, Start: new(int64(5))}, 100_000, "", nil},
		{"fixed_length keeps a start of its length", segment.NewTag{Format: fixed, Length: 6, Start: new(int64(123_456))}, 123_456, "", nil},
		{"fixed_length start at its last number", segment.NewTag{Format: fixed, Length: 6, Start: new(int64(999_999))}, 999_999, "", nil},
		{"fixed_length of 1 digit", segment.NewTag{Format: fixed, Length: 1}, 1, "", nil},
		{"fixed_length of 18 digits", segment.NewTag{Format: fixed, Length: 18}, 100_000_000_000_000_000, "", nil},
		{"fixed_length start of length+1 digits", segment.NewTag{Format: fixed, Length: 6, Start: new(int64(1_000_000))}, 0,
			"invalid start: must be from 1 to 999999 for format fixed_length with length 6", segment.ErrInvalidStart},
		{"fixed_length negative start", segment.NewTag{Format: fixed, Length: 6, Start: new(int64(-1))}, 0,
			"invalid start: must be from 1 to 999999 for format fixed_length with length 6", segment.ErrInvalidStart},
		{"fixed_length without length", segment.NewTag{Format: fixed}, 0,
			"invalid length: must be from 1 to 18 for format fixed_length", segment.ErrInvalidLength},
		{"fixed_length of 19 digits", segment.NewTag{Format: fixed, Length: 19}, 0,
			"invalid length: must be from 1 to 18 for format fixed_length", segment.ErrInvalidLength},

		{"scrambled of 6 digits", segment.NewTag{Format: scrambled, Length: 6}, 1, "", nil},
		{"scrambled of 18 digits with start 1", segment.NewTag{Format: scrambled, Length: 18, Start: new(int64(1))}, 1, "", nil},
		{"scrambled of 5 digits", segment.NewTag{Format: scrambled, Length: 5}, 0,
			"invalid length: must be from 6 to 18 for format scrambled", segment.ErrInvalidLength},
		{"scrambled of 19 digits", segment.NewTag{Format: scrambled, Length: 19}, 0,
			"invalid length: must be from 6 to 18 for format scrambled", segment.ErrInvalidLength},
		{"scrambled with a start", segment.NewTag{Format: scrambled, Length: 8, Start: new(int64(1000))}, 0,
			"invalid start: must be absent (or 1) for format scrambled: its IDs follow no order, so there is no first one to choose",
			segment.ErrInvalidStart},

		{"step checked before format", segment.NewTag{Step: -1, Format: "random"}, 0,
			"invalid step: must be from 1 to 1000", segment.ErrInvalidStep},
		{"format checked before description", segment.NewTag{Format: "random", Description: string(make([]byte, 300))}, 0,
			"invalid format: must be sequential, fixed_length, scrambled or dated", segment.ErrInvalidFormat},
		{"length checked before start", segment.NewTag{Format: fixed, Length: 0, Start: new(int64(-5))}, 0,
			"invalid length: must be from 1 to 18 for format fixed_length", segment.ErrInvalidLength},
		{"length beyond an int", segment.NewTag{Format: fixed, Length: 1 << 40}, 0,
			"invalid length: must be from 1 to 18 for format fixed_length", segment.ErrInvalidLength},

		// A start given as 0 is a start below the first ID, not "not
		// given" (nil is): each format refuses it in its own words.
		{"sequential start 0 given", segment.NewTag{Start: new(int64(0))}, 0,
			"invalid start: must be from 1 to 9223372032559808511", segment.ErrInvalidStart},
		{"fixed_length start 0 given", segment.NewTag{Format: fixed, Length: 6, Start: new(int64(0))}, 0,
			"invalid start: must be from 1 to 999999 for format fixed_length with length 6", segment.ErrInvalidStart},
		{"scrambled start 0 given", segment.NewTag{Format: scrambled, Length: 8, Start: new(int64(0))}, 0,
			"invalid start: must be absent (or 1) for format scrambled: its IDs follow no order, so there is no first one to choose",
			segment.ErrInvalidStart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := tt.tag
			tag.AppTag = "t"
			if tag.Step == 0 {
				tag.Step = 10
			}
			got, err := segment.CheckNewTag(tag, 1000)
			if tt.wantMsg == "" {
				if err != nil || got.Start != tt.wantStart || got.Format == "" {
					t.Errorf("CheckNewTag = %+v, %v; want Start %d, a format, no error", got, err, tt.wantStart)
				}
				return
			}
			e, _ := errs.Describe(err)
			if e == nil || e.Kind != errs.BadRequest || e.Error() != tt.wantMsg || !errors.Is(err, tt.wantIs) {
				t.Errorf("CheckNewTag error = %+v (%v), want bad_request %q (%v)", e, err, tt.wantMsg, tt.wantIs)
			}
		})
	}
}

func TestFixedLengthLastNumberThenExhausted(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{Now: clock.Now})
	// Step 4 from 990: the last fetch, of 4 from 998, stops at 999.
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "f", Step: 4, Start: new(int64(990)), Format: segment.FormatFixedLength, Length: 3}); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for {
		id, err := a.Next(ctx, "f")
		if errors.Is(err, segment.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %v: %v", got, err)
		}
		got = append(got, id)
	}
	want := []int64{990, 991, 992, 993, 994, 995, 996, 997, 998, 999}
	if !slices.Equal(got, want) {
		t.Fatalf("IDs = %v, want %v then exhausted", got, want)
	}
	msg := segment.ErrExhausted.Error()
	if msg != "app_tag ID space exhausted" {
		t.Errorf("exhausted message %q", msg)
	}
	// Exhausted it stays, without moving max_id on: the instance knows the
	// store is at the last number.
	fetches, maxID := st.fetches.Load(), st.maxID("f")
	for range 3 {
		clock.Add(2 * time.Second)
		if _, err := a.Next(ctx, "f"); !errors.Is(err, segment.ErrExhausted) {
			t.Fatalf("Next on a spent tag = %v, want ErrExhausted", err)
		}
		if err := a.NextN(ctx, "f", make([]int64, 2)); !errors.Is(err, segment.ErrExhausted) {
			t.Fatalf("NextN on a spent tag = %v, want ErrExhausted", err)
		}
	}
	if st.fetches.Load() != fetches || st.maxID("f") != maxID {
		t.Errorf("a spent tag fetched %d more times, max_id %d→%d; want no fetch", st.fetches.Load()-fetches, maxID, st.maxID("f"))
	}

	// A restarted instance finds the tag spent at its first fetch.
	b := alloctest.New(t, st, segment.Config{})
	if id, err := b.Next(ctx, "f"); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("restarted Next = %d, %v; want ErrExhausted", id, err)
	}
}

func TestFixedLengthBatchAndGiveBackAtTheEnd(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{})
	// One digit: 1 to 9. The first fetch, of 100, stops at 9.
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "d", Step: 100, Format: segment.FormatFixedLength, Length: 1}); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 5)
	if err := a.NextN(ctx, "d", ids); err != nil || !slices.Equal(ids, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("NextN(5) = %v, %v; want 1 to 5", ids, err)
	}
	if n, _ := a.Buffered("d"); n != 4 {
		t.Errorf("Buffered = %d, want 4 (6 to 9)", n)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The give-back compares max_id with the store's 9 and counts the 4
	// IDs.
	if got := st.maxID("d"); got != 5 {
		t.Errorf("after Close max_id = %d, want 5", got)
	}
	if s := statsOf(t, a, "d"); s.GivenBack != 4 || s.Wasted != 0 || s.Format != segment.FormatFixedLength || s.Length != 1 {
		t.Errorf("stats = %+v, want 4 given back, none wasted, fixed_length of 1", s)
	}
	b := alloctest.New(t, st, segment.Config{})
	if err := b.NextN(ctx, "d", ids[:4]); err != nil || !slices.Equal(ids[:4], []int64{6, 7, 8, 9}) {
		t.Fatalf("after restart NextN(4) = %v, %v; want 6 to 9", ids[:4], err)
	}
	if err := b.NextN(ctx, "d", ids[:1]); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("NextN past 9 = %v, want ErrExhausted", err)
	}
}
