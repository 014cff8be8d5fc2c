package scramble

import (
	"crypto/aes"
	"errors"
	"fmt"
	"sync"
)

// Bounds of the digit length, per spec §7.
const (
	// MinLength is the shortest scrambled ID: FF1 wants radix^length ≥ 10^6.
	MinLength = 6
	// MaxLength is the longest scrambled ID: 10^18 − 1 < 2^63 − 1, so every
	// ID fits an int64.
	MaxLength = 18
)

// KeySize is the key length, in bytes, to make for a new tag (AES-256).
// New also accepts 16- and 24-byte keys (AES-128, AES-192).
const KeySize = 32

// Sentinel errors; callers match them with errors.Is.
var (
	// ErrKeySize: the key is not 16, 24 or 32 bytes long.
	ErrKeySize = errors.New("scrambled key must be 16, 24 or 32 bytes")
	// ErrLength: the digit length is outside [MinLength, MaxLength].
	ErrLength = errors.New("scrambled length must be between 6 and 18 digits")
	// ErrOutOfRange: Encode of n ≥ Size(), or Decode of a number that does
	// not have exactly Length() digits.
	ErrOutOfRange = errors.New("number outside the scrambled range")
)

// Permutation is the keyed bijection of one scrambled tag: the n-th sequence
// number (n from 0) to an L-digit ID with no leading zero, and back. It is
// safe for concurrent use. Use it through the pointer New returns; a
// Permutation must not be copied.
type Permutation struct {
	f      *ff1
	length int
	low    uint64 // 10^(L−1), the smallest ID
	high   uint64 // 10^L, one past the largest ID
	// scratch lends *[16]byte AES buffers: a buffer passed to the
	// cipher.Block interface escapes, so a stack array would be a heap
	// allocation on every call; a pool keeps Encode allocation-free
	// without serialising callers on one shared buffer.
	scratch sync.Pool
}

// New returns the permutation for IDs of length digits under key, an AES
// key of 16, 24 or 32 random bytes (KeySize for new tags). It returns an
// error wrapping ErrKeySize for any other key length, and one wrapping
// ErrLength when length is outside [MinLength, MaxLength]. New does not
// retain key.
func New(key []byte, length int) (*Permutation, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("key of %d bytes: %w", len(key), ErrKeySize)
	}
	if length < MinLength || length > MaxLength {
		return nil, fmt.Errorf("length %d: %w", length, ErrLength)
	}
	block, err := aes.NewCipher(key)
	if err != nil { // unreachable: the key size was checked above
		return nil, fmt.Errorf("key of %d bytes: %w: %v", len(key), ErrKeySize, err)
	}
	p := &Permutation{
		f:      newFF1(block, length, nil),
		length: length,
		low:    pow10[length-1],
		high:   pow10[length],
	}
	p.scratch.New = func() any { return new([16]byte) }
	return p, nil
}

// Length returns the number of digits of every ID.
func (p *Permutation) Length() int { return p.length }

// Size returns how many IDs there are: 9·10^(Length−1). Encode accepts
// n < Size.
func (p *Permutation) Size() uint64 { return p.high - p.low }

// Encode returns the ID of sequence number n: an integer of exactly Length
// digits, in [10^(Length−1), 10^Length), distinct for distinct n. It returns
// an error wrapping ErrOutOfRange when n ≥ Size(): the tag's range is spent.
func (p *Permutation) Encode(n uint64) (uint64, error) {
	if n >= p.Size() {
		return 0, fmt.Errorf("encode %d, want below %d: %w", n, p.Size(), ErrOutOfRange)
	}
	s := p.scratch.Get().(*[16]byte)
	x := p.low + n
	for {
		// Cycle-walk: FF1 permutes all Length-digit strings; step along
		// x's cycle until it lands on one without a leading zero.
		x = p.f.encrypt(s, x)
		if x >= p.low {
			break
		}
	}
	p.scratch.Put(s)
	return x, nil
}

// Decode returns the sequence number whose ID is id: Decode(Encode(n)) = n.
// It returns an error wrapping ErrOutOfRange when id does not have exactly
// Length digits.
func (p *Permutation) Decode(id uint64) (uint64, error) {
	if id < p.low || id >= p.high {
		return 0, fmt.Errorf("decode %d, want %d digits: %w", id, p.length, ErrOutOfRange)
	}
	s := p.scratch.Get().(*[16]byte)
	x := id
	for {
		x = p.f.decrypt(s, x)
		if x >= p.low {
			break
		}
	}
	p.scratch.Put(s)
	return x - p.low, nil
}
