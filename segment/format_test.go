package segment_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/scramble"
	"github.com/idalloc/idalloc/segment"
)

// TestCheckNewTagFormats pins each format rule of API.md §7 to its words
// and the start it stores.
func TestCheckNewTagFormats(t *testing.T) {
	const (
		fixed     = segment.FormatFixedLength
		scrambled = segment.FormatScrambled
	)
	tests := []struct {
		name      string
		tag       segment.Tag
		wantStart int64  // when valid
		wantMsg   string // when refused
		wantIs    error
	}{
		{"sequential by default", segment.Tag{}, 1, "", nil},
		{"sequential start kept", segment.Tag{Format: segment.FormatSequential, Start: 42}, 42, "", nil},
		{"sequential with a length", segment.Tag{Length: 6}, 0,
			"invalid length: must be absent (or 0) for format sequential; send format fixed_length or scrambled for IDs of a fixed number of digits",
			segment.ErrInvalidLength},
		{"unknown format", segment.Tag{Format: "random", Length: 6}, 0,
			"invalid format: must be sequential, fixed_length or scrambled", segment.ErrInvalidFormat},
		{"format in capitals", segment.Tag{Format: "SCRAMBLED", Length: 6}, 0,
			"invalid format: must be sequential, fixed_length or scrambled", segment.ErrInvalidFormat},

		{"fixed_length starts at 10^(length-1)", segment.Tag{Format: fixed, Length: 6}, 100_000, "", nil},
		{"fixed_length raises a small start", segment.Tag{Format: fixed, Length: 6, Start: 5}, 100_000, "", nil},
		{"fixed_length keeps a start of its length", segment.Tag{Format: fixed, Length: 6, Start: 123_456}, 123_456, "", nil},
		{"fixed_length start at its last number", segment.Tag{Format: fixed, Length: 6, Start: 999_999}, 999_999, "", nil},
		{"fixed_length of 1 digit", segment.Tag{Format: fixed, Length: 1}, 1, "", nil},
		{"fixed_length of 18 digits", segment.Tag{Format: fixed, Length: 18}, 100_000_000_000_000_000, "", nil},
		{"fixed_length start of length+1 digits", segment.Tag{Format: fixed, Length: 6, Start: 1_000_000}, 0,
			"invalid start: must be from 1 to 999999 for format fixed_length with length 6", segment.ErrInvalidStart},
		{"fixed_length negative start", segment.Tag{Format: fixed, Length: 6, Start: -1}, 0,
			"invalid start: must be from 1 to 999999 for format fixed_length with length 6", segment.ErrInvalidStart},
		{"fixed_length without length", segment.Tag{Format: fixed}, 0,
			"invalid length: must be from 1 to 18 for format fixed_length", segment.ErrInvalidLength},
		{"fixed_length of 19 digits", segment.Tag{Format: fixed, Length: 19}, 0,
			"invalid length: must be from 1 to 18 for format fixed_length", segment.ErrInvalidLength},

		{"scrambled of 6 digits", segment.Tag{Format: scrambled, Length: 6}, 1, "", nil},
		{"scrambled of 18 digits with start 1", segment.Tag{Format: scrambled, Length: 18, Start: 1}, 1, "", nil},
		{"scrambled of 5 digits", segment.Tag{Format: scrambled, Length: 5}, 0,
			"invalid length: must be from 6 to 18 for format scrambled", segment.ErrInvalidLength},
		{"scrambled of 19 digits", segment.Tag{Format: scrambled, Length: 19}, 0,
			"invalid length: must be from 6 to 18 for format scrambled", segment.ErrInvalidLength},
		{"scrambled with a start", segment.Tag{Format: scrambled, Length: 8, Start: 1000}, 0,
			"invalid start: must be absent (or 1) for format scrambled: its IDs follow no order, so there is no first one to choose",
			segment.ErrInvalidStart},

		{"step checked before format", segment.Tag{Step: -1, Format: "random"}, 0,
			"invalid step: must be from 1 to 1000", segment.ErrInvalidStep},
		{"format checked before description", segment.Tag{Format: "random", Description: string(make([]byte, 300))}, 0,
			"invalid format: must be sequential, fixed_length or scrambled", segment.ErrInvalidFormat},
		{"length checked before start", segment.Tag{Format: fixed, Length: 0, Start: -5}, 0,
			"invalid length: must be from 1 to 18 for format fixed_length", segment.ErrInvalidLength},
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
			kind, msg, _ := segment.Describe(err)
			if kind != segment.KindInvalid || msg != tt.wantMsg || !errors.Is(err, tt.wantIs) {
				t.Errorf("CheckNewTag error = %s %q (%v), want invalid %q (%v)", kind, msg, err, tt.wantMsg, tt.wantIs)
			}
		})
	}
}

// scrambledAllocator serves one scrambled tag "s" of length digits from a
// fake store with the given step, and returns the tag's permutation, made
// from the key the store received.
func scrambledAllocator(t *testing.T, length int, step int64, cfg segment.Config) (*segment.Allocator, *fakeStore, *scramble.Permutation) {
	t.Helper()
	st := newFakeStore()
	if cfg.MaxStep == 0 {
		cfg.MaxStep = step
	}
	a := newAllocator(t, st, cfg)
	if err := a.CreateTag(context.Background(), segment.Tag{AppTag: "s", Step: step, Format: segment.FormatScrambled, Length: length}); err != nil {
		t.Fatal(err)
	}
	return a, st, storedPermutation(t, st, "s")
}

// storedPermutation is the permutation of the scrambled tag's row in st.
func storedPermutation(t *testing.T, st *fakeStore, tag string) *scramble.Permutation {
	t.Helper()
	st.mu.Lock()
	row := *st.rows[tag]
	st.mu.Unlock()
	if len(row.FormatKey) != scramble.KeySize {
		t.Fatalf("stored key of %d bytes, want %d", len(row.FormatKey), scramble.KeySize)
	}
	p, err := scramble.New(row.FormatKey, row.Length)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFixedLengthLastNumberThenExhausted(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newFakeStore()
	a := newAllocator(t, st, segment.Config{Now: clock.Now})
	// Step 4 from 990: the last segment (998, 1001] passes 999 and is cut.
	if err := a.CreateTag(ctx, segment.Tag{AppTag: "f", Step: 4, Start: 990, Format: segment.FormatFixedLength, Length: 3}); err != nil {
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
	_, msg, _ := segment.Describe(segment.ErrExhausted)
	if msg != "app_tag ID space exhausted" {
		t.Errorf("exhausted message %q", msg)
	}
	// Exhausted it stays, without moving max_id on: the instance knows the
	// store is past the last number.
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
	b := newAllocator(t, st, segment.Config{})
	if id, err := b.Next(ctx, "f"); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("restarted Next = %d, %v; want ErrExhausted", id, err)
	}
}

func TestFixedLengthBatchAndGiveBackAtTheEnd(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	a := newAllocator(t, st, segment.Config{})
	// One digit: 1 to 9. The first segment, (0, 100], is cut to 9.
	if err := a.CreateTag(ctx, segment.Tag{AppTag: "d", Step: 100, Format: segment.FormatFixedLength, Length: 1}); err != nil {
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
	// The give-back compares max_id with the store's 100, not the cut
	// end, and counts the 4 IDs, not the numbers past 9.
	if got := st.maxID("d"); got != 5 {
		t.Errorf("after Close max_id = %d, want 5", got)
	}
	if s := statsOf(t, a, "d"); s.GivenBack != 4 || s.Wasted != 0 || s.Format != segment.FormatFixedLength || s.Length != 1 {
		t.Errorf("stats = %+v, want 4 given back, none wasted, fixed_length of 1", s)
	}
	b := newAllocator(t, st, segment.Config{})
	if err := b.NextN(ctx, "d", ids[:4]); err != nil || !slices.Equal(ids[:4], []int64{6, 7, 8, 9}) {
		t.Fatalf("after restart NextN(4) = %v, %v; want 6 to 9", ids[:4], err)
	}
	if err := b.NextN(ctx, "d", ids[:1]); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("NextN past 9 = %v, want ErrExhausted", err)
	}
}

// TestScrambledMillionUnique: a million IDs of length 10 from one tag, singly
// and in batches, are all distinct and all of 10 digits, and in no order.
func TestScrambledMillionUnique(t *testing.T) {
	ctx := context.Background()
	a, _, _ := scrambledAllocator(t, 10, 1_000_000, segment.Config{})
	const n = 1_000_000
	ids := make([]int64, n)
	for i := range n / 2 {
		id, err := a.Next(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	for i := n / 2; i < n; i += 1000 {
		if err := a.NextN(ctx, "s", ids[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	decreases := 0
	for i, id := range ids {
		if id < 1_000_000_000 || id > 9_999_999_999 {
			t.Fatalf("ids[%d] = %d, want 10 digits", i, id)
		}
		if i > 0 && id < ids[i-1] {
			decreases++
		}
	}
	// A random order falls about half the time; increasing IDs never do.
	if decreases < n/3 {
		t.Errorf("%d of %d IDs are below the one before, want about half", decreases, n)
	}
	slices.Sort(ids)
	for i := 1; i < n; i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("ID %d issued twice", ids[i])
		}
	}
}

// TestScrambledLength6Exhausted: a scrambled tag of 6 digits issues exactly
// 9·10^5 IDs, every 6-digit number once, then refuses.
func TestScrambledLength6Exhausted(t *testing.T) {
	ctx := context.Background()
	a, _, _ := scrambledAllocator(t, 6, 70_000, segment.Config{})
	seen := make([]bool, 900_000)
	issued := 0
	record := func(id int64) {
		if id < 100_000 || id > 999_999 {
			t.Fatalf("ID %d after %d, want 6 digits", id, issued)
		}
		if seen[id-100_000] {
			t.Fatalf("ID %d issued twice", id)
		}
		seen[id-100_000] = true
		issued++
	}
	batch := make([]int64, 997) // no divisor of the step or of 900,000
	for issued+len(batch) <= 900_000 {
		if err := a.NextN(ctx, "s", batch); err != nil {
			t.Fatalf("NextN after %d IDs: %v", issued, err)
		}
		for _, id := range batch {
			record(id)
		}
	}
	for issued < 900_000 {
		id, err := a.Next(ctx, "s")
		if err != nil {
			t.Fatalf("Next after %d IDs: %v", issued, err)
		}
		record(id)
	}
	if id, err := a.Next(ctx, "s"); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("Next after 900,000 IDs = %d, %v; want ErrExhausted", id, err)
	}
	if err := a.NextN(ctx, "s", batch[:1]); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("NextN after 900,000 IDs = %v, want ErrExhausted", err)
	}
}

// TestScrambledRestartsNeverRepeat: graceful restarts continue the tag's
// sequence exactly (the IDs are the permutation of 0, 1, 2, … with no
// gap), and an instance that dies without Close loses its range without
// its IDs ever coming again.
func TestScrambledRestartsNeverRepeat(t *testing.T) {
	ctx := context.Background()
	a, st, perm := scrambledAllocator(t, 8, 1000, segment.Config{})
	var ids []int64
	take := func(al *segment.Allocator, n int) {
		t.Helper()
		batch := make([]int64, n/2)
		if err := al.NextN(ctx, "s", batch); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, batch...)
		for range n - n/2 {
			id, err := al.Next(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	take(a, 2500)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b := newAllocator(t, st, segment.Config{MaxStep: 1000})
	take(b, 2500)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		want, _ := perm.Encode(uint64(i))
		if id != int64(want) {
			t.Fatalf("ids[%d] = %d, want the permutation of sequence number %d, %d", i, id, i, want)
		}
	}

	killed := newAllocator(t, st, segment.Config{MaxStep: 1000})
	take(killed, 700) // then never closed: as after kill -9
	c := newAllocator(t, st, segment.Config{MaxStep: 1000})
	take(c, 3000)
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("ID %d issued twice across restarts", ids[i])
		}
	}
}

// TestScrambledKeyStaysInTheStore: a scrambled tag's key is made from
// Config.Rand at create, goes to the store, and no allocator view shows it.
func TestScrambledKeyStaysInTheStore(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	key := bytes.Repeat([]byte{0xA5}, scramble.KeySize)
	a := newAllocator(t, st, segment.Config{Rand: bytes.NewReader(slices.Concat(key, key[:5]))})
	if err := a.CreateTag(ctx, segment.Tag{AppTag: "s", Step: 10, Format: segment.FormatScrambled, Length: 12,
		FormatKey: []byte("ignored, the allocator makes the key")}); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	stored := st.rows["s"].FormatKey
	st.mu.Unlock()
	if !bytes.Equal(stored, key) {
		t.Errorf("stored key %x, want the %d bytes read from Config.Rand", stored, scramble.KeySize)
	}
	// The reader has 5 bytes left: too few for another key.
	err := a.CreateTag(ctx, segment.Tag{AppTag: "s2", Step: 10, Format: segment.FormatScrambled, Length: 12})
	if !errors.Is(err, segment.ErrUnavailable) {
		t.Errorf("CreateTag without randomness = %v, want ErrUnavailable", err)
	}

	check := func(a *segment.Allocator, when string) {
		t.Helper()
		for _, tg := range a.Tags() {
			if tg.FormatKey != nil {
				t.Errorf("%s: Tags() shows %s's key", when, tg.AppTag)
			}
			if tg.AppTag == "s" && (tg.Format != segment.FormatScrambled || tg.Length != 12) {
				t.Errorf("%s: Tags() shows s as %q of %d, want scrambled of 12", when, tg.Format, tg.Length)
			}
		}
	}
	check(a, "after create")
	check(newAllocator(t, st, segment.Config{}), "after reload")
	if s := statsOf(t, a, "s"); s.Format != segment.FormatScrambled || s.Length != 12 {
		t.Errorf("Stats() = %+v, want scrambled of 12", s)
	}
	// Another tag, another key: same sequence, other IDs.
	b := newAllocator(t, st, segment.Config{})
	if err := b.CreateTag(ctx, segment.Tag{AppTag: "s3", Step: 10, Format: segment.FormatScrambled, Length: 12}); err != nil {
		t.Fatal(err)
	}
	x, err1 := b.Next(ctx, "s")
	y, err2 := b.Next(ctx, "s3")
	if err1 != nil || err2 != nil || x == y {
		t.Errorf("first IDs of two scrambled tags = %d, %d (%v, %v); want two distinct IDs", x, y, err1, err2)
	}
}

// TestUnservableRowIsRefused: a row whose format this instance cannot
// serve (hand-edited, or from a newer version) is answered as a fault,
// never served in another format, and costs the store nothing; its
// neighbours are served.
func TestUnservableRowIsRefused(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(
		segment.Tag{AppTag: "future", Step: 10, Format: "base36", Length: 8},
		segment.Tag{AppTag: "keyless", Step: 10, Format: segment.FormatScrambled, Length: 8},
		segment.Tag{AppTag: "ok", Step: 10},
	)
	a := newAllocator(t, st, segment.Config{})
	for _, tag := range []string{"future", "keyless"} {
		_, err := a.Next(ctx, tag)
		if err == nil {
			t.Fatalf("Next(%s) served an ID", tag)
		}
		if _, _, ok := segment.Describe(err); ok {
			t.Errorf("Next(%s) = %v, want a fault (no client words)", tag, err)
		}
		if err := a.NextN(ctx, tag, make([]int64, 3)); err == nil {
			t.Errorf("NextN(%s) served IDs", tag)
		}
	}
	if n := st.fetches.Load(); n != 0 {
		t.Errorf("the store was asked %d times for unservable rows, want 0", n)
	}
	if id, err := a.Next(ctx, "ok"); err != nil || id != 1 {
		t.Errorf("Next(ok) = %d, %v; want 1", id, err)
	}
}
