package scramble

import (
	"crypto/cipher"
	"encoding/binary"
	"math/bits"
)

// rounds is FF1's number of Feistel rounds (SP 800-38G, Algorithm 7).
const rounds = 10

// pow10 holds 10^0 … 10^19; 10^19 < 2^64.
var pow10 = [20]uint64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// ff1 is NIST SP 800-38G FF1 with radix 10 for numeral strings of a fixed
// length n (MinLength ≤ n ≤ MaxLength) under one key and one tweak. A
// numeral string is held as the uint64 it spells, leading zeros included
// (n digits, value < 10^n), so NUM and STR on the halves are a division by
// 10^v.
//
// With n ≤ 18 the halves have u = ⌊n/2⌋ ≤ 9 and v = n − u ≤ 9 digits, so
// b = ⌈⌈v·log2 10⌉/8⌉ ≤ 4 bytes and d = 4⌈b/4⌉ + 4 = 8: S is the first 8
// bytes of R and y fits a uint64. P and everything in Q before its last
// block do not depend on the round or on B, so their CBC-MAC is computed once
// (mask); each round is then one AES call.
//
// An ff1 is read-only after newFF1 and safe for concurrent use (AES blocks
// from crypto/aes are).
type ff1 struct {
	block  cipher.Block
	u, v   int    // lengths of the halves A and B
	b      int    // bytes of [NUM(B)]^b in Q
	pow10u uint64 // 10^u, the modulus of even rounds
	pow10v uint64 // 10^v, the modulus of odd rounds; splits and joins the halves
	// mask is CIPH-state after P || Q[:len(Q)−16], XORed with the last
	// block of Q with the round number and NUM(B) left zero: the input to
	// the final AES call of the PRF is mask ^ (i at 15−b, NUM(B) at 16−b…).
	mask [16]byte
}

// newFF1 prepares FF1 for n-digit strings with the given tweak. The caller
// checks MinLength ≤ n ≤ MaxLength; newFF1 panics otherwise, as that is a
// bug in this package. It does not retain tweak.
func newFF1(block cipher.Block, n int, tweak []byte) *ff1 {
	if n < MinLength || n > MaxLength {
		panic("scramble: FF1 length out of range")
	}
	f := &ff1{block: block, u: n / 2, v: n - n/2}
	f.pow10u, f.pow10v = pow10[f.u], pow10[f.v]
	// ⌈v·log2 10⌉ is the bit length of 10^v − 1: 10^v is not a power of
	// two, so 2^(k−1) ≤ 10^v − 1 < 10^v < 2^k for k = ⌈v·log2 10⌉.
	f.b = (bits.Len64(pow10[f.v]-1) + 7) / 8

	// P = [1]^1 || [2]^1 || [1]^1 || [radix]^3 || [10]^1 || [u mod 256]^1 || [n]^4 || [t]^4.
	t := len(tweak)
	var state [16]byte
	state[0], state[1], state[2] = 1, 2, 1
	state[3], state[4], state[5] = 0, 0, 10
	state[6] = 10
	state[7] = byte(f.u)
	binary.BigEndian.PutUint32(state[8:12], uint32(n))
	binary.BigEndian.PutUint32(state[12:16], uint32(t))
	block.Encrypt(state[:], state[:]) // CBC-MAC with a zero IV: Y1 = CIPH(P)

	// Q = T || [0]^((−t−b−1) mod 16) || [i]^1 || [NUM(B)]^b, a whole number
	// of blocks. Build it with i and NUM(B) zero, chain all but its last
	// block into state, and fold the last block into mask.
	pad := ((-t-f.b-1)%16 + 16) % 16
	q := make([]byte, t+pad+1+f.b)
	copy(q, tweak)
	for len(q) > 16 {
		for j := range 16 {
			state[j] ^= q[j]
		}
		block.Encrypt(state[:], state[:])
		q = q[16:]
	}
	for j := range 16 {
		f.mask[j] = state[j] ^ q[j]
	}
	return f
}

// prf returns y = NUM(S) for round i with the numeral string half x: the
// first d = 8 bytes of R = PRF(P || Q), Q ending in [i]^1 || [NUM(x)]^b.
// scratch is the caller's block buffer (see Permutation.scratch).
func (f *ff1) prf(scratch *[16]byte, i int, x uint64) uint64 {
	*scratch = f.mask
	scratch[15-f.b] ^= byte(i)
	for k := 0; k < f.b; k++ {
		scratch[15-k] ^= byte(x >> (8 * k))
	}
	f.block.Encrypt(scratch[:], scratch[:])
	return binary.BigEndian.Uint64(scratch[:8])
}

// encrypt is FF1.Encrypt (Algorithm 7) on the n-digit string x < 10^n.
func (f *ff1) encrypt(scratch *[16]byte, x uint64) uint64 {
	a, b := x/f.pow10v, x%f.pow10v // A = X[1..u], B = X[u+1..n]
	for i := range rounds {
		m := f.pow10v // radix^m, m = v in odd rounds
		if i%2 == 0 {
			m = f.pow10u
		}
		// c = (NUM(A) + y) mod radix^m; a and y mod radix^m are below
		// radix^m ≤ 10^9, so one conditional subtraction reduces the sum.
		c := a + f.prf(scratch, i, b)%m
		if c >= m {
			c -= m
		}
		a, b = b, c
	}
	return a*f.pow10v + b
}

// decrypt is FF1.Decrypt (Algorithm 8) on the n-digit string x < 10^n.
func (f *ff1) decrypt(scratch *[16]byte, x uint64) uint64 {
	a, b := x/f.pow10v, x%f.pow10v
	for i := rounds - 1; i >= 0; i-- {
		m := f.pow10v
		if i%2 == 0 {
			m = f.pow10u
		}
		// c = (NUM(B) − y) mod radix^m, without going below zero.
		c := b + m - f.prf(scratch, i, a)%m
		if c >= m {
			c -= m
		}
		a, b = c, a
	}
	return a*f.pow10v + b
}
