package segment_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/scramble"
	"github.com/idalloc/idalloc/segment"
)

// scrambledAllocator serves one scrambled tag "s" of length digits from a
// fake store with the given step, and returns the tag's permutation, made
// from the key the store received.
func scrambledAllocator(t *testing.T, length int, step int64, cfg segment.Config) (*segment.Allocator, *fakeStore, *scramble.Permutation) {
	t.Helper()
	st := newFakeStore()
	if cfg.MaxStep == 0 {
		cfg.MaxStep = step
	}
	a := alloctest.New(t, st, cfg)
	if _, err := a.CreateTag(context.Background(), segment.NewTag{AppTag: "s", Step: step, Format: segment.FormatScrambled, Length: int64(length)}); err != nil {
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
	b := alloctest.New(t, st, segment.Config{MaxStep: 1000})
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

	killed := alloctest.New(t, st, segment.Config{MaxStep: 1000})
	take(killed, 700) // then never closed: as after kill -9
	c := alloctest.New(t, st, segment.Config{MaxStep: 1000})
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
	a := alloctest.New(t, st, segment.Config{Rand: bytes.NewReader(slices.Concat(key, key[:5]))})
	// NewTag has no key to give: the allocator makes it.
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "s", Step: 10, Format: segment.FormatScrambled, Length: 12}); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	stored := st.rows["s"].FormatKey
	st.mu.Unlock()
	if !bytes.Equal(stored, key) {
		t.Errorf("stored key %x, want the %d bytes read from Config.Rand", stored, scramble.KeySize)
	}
	// The reader has 5 bytes left: too few for another key.
	_, err := a.CreateTag(ctx, segment.NewTag{AppTag: "s2", Step: 10, Format: segment.FormatScrambled, Length: 12})
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
	check(alloctest.New(t, st, segment.Config{}), "after reload")
	if s := statsOf(t, a, "s"); s.Format != segment.FormatScrambled || s.Length != 12 {
		t.Errorf("Stats() = %+v, want scrambled of 12", s)
	}
	// Another tag, another key: same sequence, other IDs.
	b := alloctest.New(t, st, segment.Config{})
	if _, err := b.CreateTag(ctx, segment.NewTag{AppTag: "s3", Step: 10, Format: segment.FormatScrambled, Length: 12}); err != nil {
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
	a := alloctest.New(t, st, segment.Config{})
	for _, tag := range []string{"future", "keyless"} {
		_, err := a.Next(ctx, tag)
		if err == nil {
			t.Fatalf("Next(%s) served an ID", tag)
		}
		if _, ok := errs.Describe(err); ok {
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
