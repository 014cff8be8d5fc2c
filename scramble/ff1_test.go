package scramble

import (
	"crypto/aes"
	"encoding/hex"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// nistSample is one FF1 sample from NIST's FF1samples.pdf (Cryptographic
// Standards and Guidelines, examples for SP 800-38G).
type nistSample struct {
	num        int // the sample number in the PDF
	key, tweak string
	radix      int
	pt, ct     string
}

// nistSamples are all nine; samples 3, 6 and 9 are radix 36 and check only
// the reference implementation below, the others check ff1 as well.
var nistSamples = []nistSample{
	{1, "2B7E151628AED2A6ABF7158809CF4F3C", "", 10, "0123456789", "2433477484"},
	{2, "2B7E151628AED2A6ABF7158809CF4F3C", "39383736353433323130", 10, "0123456789", "6124200773"},
	{3, "2B7E151628AED2A6ABF7158809CF4F3C", "3737373770717273373737", 36, "0123456789abcdefghi", "a9tv40mll9kdu509eum"},
	{4, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "", 10, "0123456789", "2830668132"},
	{5, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "39383736353433323130", 10, "0123456789", "2496655549"},
	{6, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "3737373770717273373737", 36, "0123456789abcdefghi", "xbj3kv35jrawxv32ysr"},
	{7, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "", 10, "0123456789", "6657667009"},
	{8, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "39383736353433323130", 10, "0123456789", "1001623463"},
	{9, "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "3737373770717273373737", 36, "0123456789abcdefghi", "xs8a0azh2avyalyzuwd"},
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func mustFF1(tb testing.TB, key []byte, n int, tweak []byte) *ff1 {
	tb.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatalf("aes.NewCipher: %v", err)
	}
	return newFF1(block, n, tweak)
}

func mustUint(tb testing.TB, digits string) uint64 {
	tb.Helper()
	x, err := strconv.ParseUint(digits, 10, 64) // not fmt.Sscan: it reads 0123 as octal
	if err != nil {
		tb.Fatalf("parse %q: %v", digits, err)
	}
	return x
}

// TestFF1NISTSamples runs the radix-10 samples (1, 2, 4, 5, 7, 8: AES-128,
// -192 and -256, empty and 10-byte tweak) through ff1 both ways.
func TestFF1NISTSamples(t *testing.T) {
	for _, s := range nistSamples {
		if s.radix != 10 {
			continue
		}
		t.Run(fmt.Sprintf("sample %d", s.num), func(t *testing.T) {
			f := mustFF1(t, mustHex(t, s.key), len(s.pt), mustHex(t, s.tweak))
			var scratch [16]byte
			pt, ct := mustUint(t, s.pt), mustUint(t, s.ct)
			if got := f.encrypt(&scratch, pt); got != ct {
				t.Errorf("encrypt(%s) = %0*d, want %s", s.pt, len(s.pt), got, s.ct)
			}
			if got := f.decrypt(&scratch, ct); got != pt {
				t.Errorf("decrypt(%s) = %0*d, want %s", s.ct, len(s.ct), got, s.pt)
			}
		})
	}
}

// TestReferenceFF1NISTSamples checks the big-integer reference against all
// nine samples, so that it can vouch for ff1 where no sample exists.
func TestReferenceFF1NISTSamples(t *testing.T) {
	for _, s := range nistSamples {
		t.Run(fmt.Sprintf("sample %d", s.num), func(t *testing.T) {
			key, tweak := mustHex(t, s.key), mustHex(t, s.tweak)
			if got := refFF1(t, key, tweak, s.radix, s.pt, false); got != s.ct {
				t.Errorf("encrypt(%s) = %s, want %s", s.pt, got, s.ct)
			}
			if got := refFF1(t, key, tweak, s.radix, s.ct, true); got != s.pt {
				t.Errorf("decrypt(%s) = %s, want %s", s.ct, got, s.pt)
			}
		})
	}
}

// TestFF1MatchesReference compares ff1 with the reference at every length
// and several tweak lengths (the NIST samples cover only length 10), on
// random inputs and the extremes 0 and 10^n − 1.
func TestFF1MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := MinLength; n <= MaxLength; n++ {
		for _, tlen := range []int{0, 1, 10, 11, 12, 15, 16, 17, 40} {
			for _, klen := range []int{16, 24, 32} {
				key := make([]byte, klen)
				tweak := make([]byte, tlen)
				for i := range key {
					key[i] = byte(rng.Uint32())
				}
				for i := range tweak {
					tweak[i] = byte(rng.Uint32())
				}
				f := mustFF1(t, key, n, tweak)
				var scratch [16]byte
				inputs := []uint64{0, pow10[n] - 1, rng.Uint64N(pow10[n]), rng.Uint64N(pow10[n])}
				for _, x := range inputs {
					digits := fmt.Sprintf("%0*d", n, x)
					want := refFF1(t, key, tweak, 10, digits, false)
					got := f.encrypt(&scratch, x)
					if fmt.Sprintf("%0*d", n, got) != want {
						t.Fatalf("n=%d t=%d k=%d: encrypt(%s) = %0*d, want %s", n, tlen, klen, digits, n, got, want)
					}
					if back := f.decrypt(&scratch, got); back != x {
						t.Fatalf("n=%d t=%d k=%d: decrypt(%s) = %0*d, want %s", n, tlen, klen, want, n, back, digits)
					}
				}
			}
		}
	}
}

// refFF1 is SP 800-38G Algorithms 7 and 8 written out literally with
// math/big and digit strings, for any radix ≤ 36 and d ≤ 16 (every NIST
// sample, and every length up to 18 digits in radix 10). It is slow and
// allocates freely; it exists to check ff1.
func refFF1(tb testing.TB, key, tweak []byte, radix int, x string, decrypt bool) string {
	tb.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatalf("aes.NewCipher: %v", err)
	}
	ciph := func(in []byte) []byte { // CBC-MAC with a zero IV
		y := make([]byte, 16)
		for off := 0; off < len(in); off += 16 {
			for j := range 16 {
				y[j] ^= in[off+j]
			}
			block.Encrypt(y, y)
		}
		return y
	}
	num := func(s string) *big.Int {
		v, ok := new(big.Int).SetString(s, radix)
		if !ok {
			tb.Fatalf("NUM(%q) in radix %d", s, radix)
		}
		return v
	}
	str := func(v *big.Int, m int) string {
		s := v.Text(radix)
		return strings.Repeat("0", m-len(s)) + s
	}
	be := func(v *big.Int, size int) []byte { return v.FillBytes(make([]byte, size)) }

	n, t := len(x), len(tweak)
	u := n / 2
	v := n - u
	A, B := x[:u], x[u:]
	// b = ⌈⌈v·log2(radix)⌉/8⌉, computed exactly: the bit length of radix^v − 1.
	rv := new(big.Int).Exp(big.NewInt(int64(radix)), big.NewInt(int64(v)), nil)
	b := (new(big.Int).Sub(rv, big.NewInt(1)).BitLen() + 7) / 8
	d := 4*((b+3)/4) + 4
	if d > 16 {
		tb.Fatalf("refFF1: d = %d; only d ≤ 16 (S within R) is written out", d)
	}
	P := []byte{1, 2, 1, 0, byte(radix >> 8), byte(radix), 10, byte(u)}
	P = append(P, be(big.NewInt(int64(n)), 4)...)
	P = append(P, be(big.NewInt(int64(t)), 4)...)
	pad := ((-t-b-1)%16 + 16) % 16

	for k := range rounds {
		i := k
		src := B // encryption reads B, decryption reads A
		if decrypt {
			i = rounds - 1 - k
			src = A
		}
		Q := append(append(append([]byte{}, tweak...), make([]byte, pad)...), byte(i))
		Q = append(Q, be(num(src), b)...)
		R := ciph(append(append([]byte{}, P...), Q...))
		S := R // S = R || CIPH(R ⊕ [1]^16) || …, of which d ≤ 16 bytes are R
		y := new(big.Int).SetBytes(S[:d])
		m := v
		if i%2 == 0 {
			m = u
		}
		mod := new(big.Int).Exp(big.NewInt(int64(radix)), big.NewInt(int64(m)), nil)
		if !decrypt {
			c := new(big.Int).Mod(new(big.Int).Add(num(A), y), mod)
			A, B = B, str(c, m)
		} else {
			c := new(big.Int).Mod(new(big.Int).Sub(num(B), y), mod)
			A, B = str(c, m), A
		}
	}
	return A + B
}
