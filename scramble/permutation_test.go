package scramble

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keySize int
		length  int
		want    error
	}{
		{"no key", 0, 10, ErrKeySize},
		{"15-byte key", 15, 10, ErrKeySize},
		{"17-byte key", 17, 10, ErrKeySize},
		{"31-byte key", 31, 10, ErrKeySize},
		{"33-byte key", 33, 10, ErrKeySize},
		{"64-byte key", 64, 10, ErrKeySize},
		{"length 5", 32, 5, ErrLength},
		{"length 19", 32, 19, ErrLength},
		{"length 0", 32, 0, ErrLength},
		{"negative length", 32, -6, ErrLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(make([]byte, tc.keySize), tc.length)
			if !errors.Is(err, tc.want) || p != nil {
				t.Errorf("New(%d-byte key, %d) = %v, %v, want nil, %v", tc.keySize, tc.length, p, err, tc.want)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	for _, keySize := range []int{16, 24, 32} {
		for length := MinLength; length <= MaxLength; length++ {
			p, err := New(make([]byte, keySize), length)
			if err != nil {
				t.Fatalf("New(%d-byte key, %d): %v", keySize, length, err)
			}
			if got, want := p.Size(), 9*pow10[length-1]; got != want {
				t.Errorf("length %d: Size() = %d, want %d", length, got, want)
			}
			if got := p.Length(); got != length {
				t.Errorf("Length() = %d, want %d", got, length)
			}
		}
	}
}

// TestGolden pins the mapping: it is part of the stored format (see the
// package doc). Each value is also recomputed from the big-integer reference
// FF1 with the cycle-walk written out, so a pin cannot drift with a bug.
func TestGolden(t *testing.T) {
	for _, g := range []struct {
		keyBytes, length int
		n, id            uint64
	}{
		{32, 6, 0, 443801},
		{32, 6, 1, 184350},
		{32, 6, 2, 469910},
		{32, 6, 899_999, 815765},
		{32, 10, 0, 9189091486},
		{32, 10, 1, 7508120828},
		{32, 10, 2, 3588794873},
		{32, 10, 999_999, 7924735762},
		{32, 10, 8_999_999_999, 2795864672},
		{32, 18, 0, 114821862530965933},
		{32, 18, 1, 563927103346673838},
		{32, 18, 2, 442595513484849168},
		{32, 18, 899_999_999_999_999_999, 641257831377518486},
		{16, 12, 0, 546441628576},
		{16, 12, 1, 358934726448},
		{16, 12, 2, 594275563774},
		{24, 8, 0, 18693211},
		{24, 8, 1, 30292604},
		{24, 8, 2, 61288792},
	} {
		key := mustHex(t, testKey)[:g.keyBytes]
		p := mustNew(t, key, g.length)
		if got, err := p.Encode(g.n); err != nil || got != g.id {
			t.Errorf("AES-%d length %d: Encode(%d) = %d, %v, want %d", 8*g.keyBytes, g.length, g.n, got, err, g.id)
		}
		if got, err := p.Decode(g.id); err != nil || got != g.n {
			t.Errorf("AES-%d length %d: Decode(%d) = %d, %v, want %d", 8*g.keyBytes, g.length, g.id, got, err, g.n)
		}
		x := refFF1(t, key, nil, 10, strconv.FormatUint(pow10[g.length-1]+g.n, 10), false)
		for x[0] == '0' { // a leading zero: walk on along the cycle
			x = refFF1(t, key, nil, 10, x, false)
		}
		if want := strconv.FormatUint(g.id, 10); x != want {
			t.Errorf("AES-%d length %d: reference FF1 with cycle-walk gives %s for n=%d, want %s", 8*g.keyBytes, g.length, x, g.n, want)
		}
	}
}

// TestBoundaries checks the first and last sequence numbers of every length,
// the rejections just outside the range, and that length 18 fits int64.
func TestBoundaries(t *testing.T) {
	key := mustHex(t, testKey)
	for length := MinLength; length <= MaxLength; length++ {
		t.Run(fmt.Sprintf("length %d", length), func(t *testing.T) {
			p := mustNew(t, key, length)
			low, high := pow10[length-1], pow10[length]
			for _, n := range []uint64{0, 1, p.Size() - 2, p.Size() - 1} {
				id, err := p.Encode(n)
				if err != nil || id < low || id >= high {
					t.Errorf("Encode(%d) = %d, %v, want %d digits", n, id, err, length)
				}
				if id > math.MaxInt64 {
					t.Errorf("Encode(%d) = %d, above math.MaxInt64", n, id)
				}
				if back, err := p.Decode(id); err != nil || back != n {
					t.Errorf("Decode(%d) = %d, %v, want %d", id, back, err, n)
				}
			}
			for _, n := range []uint64{p.Size(), p.Size() + 1, math.MaxUint64} {
				if id, err := p.Encode(n); !errors.Is(err, ErrOutOfRange) {
					t.Errorf("Encode(%d) = %d, %v, want %v", n, id, err, ErrOutOfRange)
				}
			}
			for _, id := range []uint64{0, low - 1, high, math.MaxUint64} {
				if n, err := p.Decode(id); !errors.Is(err, ErrOutOfRange) {
					t.Errorf("Decode(%d) = %d, %v, want %v", id, n, err, ErrOutOfRange)
				}
			}
		})
	}
}

// TestRoundTrip checks random sequence numbers at every length and key size.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, keyBytes := range []int{16, 24, 32} {
		p0 := mustHex(t, testKey)[:keyBytes]
		for length := MinLength; length <= MaxLength; length++ {
			p := mustNew(t, p0, length)
			for range 2000 {
				n := rng.Uint64N(p.Size())
				id, err := p.Encode(n)
				if err != nil || len(strconv.FormatUint(id, 10)) != length {
					t.Fatalf("AES-%d: Encode(%d) = %d, %v, want %d digits", 8*keyBytes, n, id, err, length)
				}
				if back, err := p.Decode(id); err != nil || back != n {
					t.Fatalf("AES-%d: Decode(%d) = %d, %v, want %d", 8*keyBytes, id, back, err, n)
				}
			}
		}
	}
}

// TestKeysDiffer: tags with different keys get unrelated permutations, even
// when the keys differ in one bit or one is a prefix of the other. Among the
// first 10,000 IDs of length 10, two independent permutations agree at a
// position with probability 1/(9·10^9) each, so any agreement is a failure.
func TestKeysDiffer(t *testing.T) {
	base := mustHex(t, testKey)
	flipped := append([]byte(nil), base...)
	flipped[31] ^= 1
	keys := map[string][]byte{
		"base":           base,
		"one bit off":    flipped,
		"16-byte prefix": base[:16],
		"24-byte prefix": base[:24],
		"other":          mustHex(t, "000102030405060708090a0b0c0d0e0f"),
	}
	const count = 10_000
	ids := map[string][]uint64{}
	for name, key := range keys {
		ids[name] = encodeAll(t, mustNew(t, key, 10), 0, count)
	}
	for a := range keys {
		for b := range keys {
			if a >= b {
				continue
			}
			for n := range count {
				if ids[a][n] == ids[b][n] {
					t.Errorf("keys %q and %q both map n=%d to %d", a, b, n, ids[a][n])
				}
			}
		}
	}
}

// TestNewDoesNotRetainKey: changing the caller's key slice after New changes nothing.
func TestNewDoesNotRetainKey(t *testing.T) {
	key := mustHex(t, testKey)
	p := mustNew(t, key, 10)
	before, _ := p.Encode(42)
	clear(key)
	if after, _ := p.Encode(42); after != before {
		t.Errorf("Encode(42) after clearing the key = %d, want %d", after, before)
	}
}

// TestConcurrentUse runs one Permutation from many goroutines (meant for
// -race) and checks every answer against a sequential run.
func TestConcurrentUse(t *testing.T) {
	p := mustNew(t, mustHex(t, testKey), 12)
	const count = 2000
	want := make([]uint64, count)
	for n := range want {
		want[n], _ = p.Encode(uint64(n))
	}
	const workers = 8
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range count {
				n := (i + w*count/workers) % count // each starts elsewhere
				id, err := p.Encode(uint64(n))
				if err != nil || id != want[n] {
					errc <- fmt.Errorf("worker %d: Encode(%d) = %d, %v, want %d", w, n, id, err, want[n])
					return
				}
				if back, err := p.Decode(id); err != nil || back != uint64(n) {
					errc <- fmt.Errorf("worker %d: Decode(%d) = %d, %v, want %d", w, id, back, err, n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestEncodeDoesNotAllocate holds the hot path to zero allocations (the
// race detector drops pooled items on purpose, so it is skipped there).
func TestEncodeDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race; BenchmarkEncode reports allocs")
	}
	p := mustNew(t, mustHex(t, testKey), 10)
	var n uint64
	allocs := testing.AllocsPerRun(1000, func() {
		id, _ := p.Encode(n)
		_, _ = p.Decode(id)
		n++
	})
	if allocs != 0 {
		t.Errorf("Encode+Decode: %v allocations per call, want 0", allocs)
	}
}
