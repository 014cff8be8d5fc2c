package scramble

import (
	"fmt"
	"math"
	"testing"
)

// The tests in this file check that consecutive IDs of a tag do not betray
// the next one: what an observer sees should look like draws from a uniform
// random permutation. They are deterministic (fixed keys, fixed n), so they
// cannot flake; each threshold sits at least 6 standard deviations from what
// a random permutation gives, so a sound permutation passes them for
// practically any key (three unrelated keys are run to show the keys are not
// cherry-picked), while the usual imitations (a counter, an affine map
// n·a+b mod S, a digit shuffle, a quadratic map) fail them: see
// TestStatisticsCatchWeakScramblers. A hash would pass them; what rules it
// out is uniqueness, which the bijection tests check.

// statKeys are the keys the statistical tests run under.
var statKeys = []string{
	testKey,
	"000102030405060708090a0b0c0d0e0f",
	"9e3779b97f4a7c15f39cc0605cedc834b26d3a9c1b8a7e6d",
}

// statCount is how many consecutive IDs of length 10 each test sees.
const statCount = 200_000

// chiSquare returns Σ (observed − expected)² / expected over cells with the
// same expected count.
func chiSquare(counts []int, total int) float64 {
	expected := float64(total) / float64(len(counts))
	var x2 float64
	for _, c := range counts {
		d := float64(c) - expected
		x2 += d * d / expected
	}
	return x2
}

// chiLimit is the acceptance bound for a chi-square with df degrees of
// freedom: mean df, standard deviation √(2·df), plus 6 of them.
func chiLimit(df int) float64 { return float64(df) + 6*math.Sqrt(2*float64(df)) }

// differenceProblems looks at d = ID(n+1) − ID(n) for ids = ID(0), ID(1), …
// of a range [low, low+size). For independent uniform draws X, Y from
// [0, S), d is triangular on (−S, S): half positive (an increasing sequence,
// or a counter showing through, is not), and with z = (d+S)/(2S),
// F(z) = 2z² below ½ and 1 − 2(1−z)² above is uniform on [0, 1) (checked by
// chi-square over 50 buckets). And no difference value should repeat more
// than a couple of times: 200,000 differences spread over 1.8·10^10 values
// give about 1.5 colliding pairs in expectation, while an affine map repeats
// one difference every time, and a digit shuffle a few dozen differences
// (the same holds for second differences, which catch quadratic maps).
func differenceProblems(ids []uint64, size uint64) (problems []string, stats string) {
	const buckets = 50
	counts := make([]int, buckets)
	seen := make(map[int64]int, len(ids))
	seen2 := make(map[int64]int, len(ids)) // second differences
	positive, maxRepeat, maxRepeat2 := 0, 0, 0
	s := float64(size)
	for k := 1; k < len(ids); k++ {
		d := int64(ids[k]) - int64(ids[k-1])
		if d > 0 {
			positive++
		}
		z := (float64(d) + s) / (2 * s)
		f := 2 * z * z
		if z > 0.5 {
			f = 1 - 2*(1-z)*(1-z)
		}
		counts[min(int(f*buckets), buckets-1)]++
		seen[d]++
		maxRepeat = max(maxRepeat, seen[d])
		if k >= 2 {
			d2 := d - (int64(ids[k-1]) - int64(ids[k-2]))
			seen2[d2]++
			maxRepeat2 = max(maxRepeat2, seen2[d2])
		}
	}
	pairs := len(ids) - 1
	frac := float64(positive) / float64(pairs)
	x2, limit := chiSquare(counts, pairs), chiLimit(buckets-1)
	// Binomial(pairs, ½): σ ≈ 0.0011 for 200,000; allow ±0.01 (9σ).
	if math.Abs(frac-0.5) > 0.01 {
		problems = append(problems, fmt.Sprintf("fraction of increasing steps = %.4f, want 0.5 ± 0.01", frac))
	}
	if x2 > limit {
		problems = append(problems, fmt.Sprintf("differences vs the triangular law: chi-square = %.1f over %d buckets, want ≤ %.1f", x2, buckets, limit))
	}
	if maxRepeat > 3 {
		problems = append(problems, fmt.Sprintf("one difference occurs %d times among %d, want ≤ 3", maxRepeat, pairs))
	}
	if maxRepeat2 > 3 {
		problems = append(problems, fmt.Sprintf("one second difference occurs %d times, want ≤ 3", maxRepeat2))
	}
	stats = fmt.Sprintf("increasing %.4f, chi-square %.1f (limit %.1f), most repeated difference ×%d, second difference ×%d",
		frac, x2, limit, maxRepeat, maxRepeat2)
	return problems, stats
}

// serialProblems is a serial test: the pair (ID(n), ID(n+1)) should fall
// evenly into a 10×10 grid, both by the ID's position in the range (which
// tenth) and by its last digit; knowing where one ID lies says nothing
// about where the next lies. It also checks that the IDs are spread evenly
// (100 buckets) and that the last digit of ID(n) does not follow n mod 10.
func serialProblems(ids []uint64, low, size uint64) (problems []string, stats string) {
	tenth := func(id uint64) int { return int((id - low) / (size / 10)) }
	var byTenth, byDigit, byIndex, spread [100]int
	for k, id := range ids {
		spread[(id-low)/(size/100)]++
		byIndex[(uint64(k)%10)*10+id%10]++
		if k > 0 {
			byTenth[tenth(ids[k-1])*10+tenth(id)]++
			byDigit[(ids[k-1]%10)*10+id%10]++
		}
	}
	limit := chiLimit(99)
	stats = fmt.Sprintf("chi-square limit %.1f:", limit)
	for _, c := range []struct {
		what   string
		counts []int
		total  int
	}{
		{"ID spread over 100 buckets", spread[:], len(ids)},
		{"(tenth of ID(n), tenth of ID(n+1))", byTenth[:], len(ids) - 1},
		{"(last digit of ID(n), last digit of ID(n+1))", byDigit[:], len(ids) - 1},
		{"(n mod 10, last digit of ID(n))", byIndex[:], len(ids)},
	} {
		x2 := chiSquare(c.counts, c.total)
		stats += fmt.Sprintf(" %.1f", x2)
		if x2 > limit {
			problems = append(problems, fmt.Sprintf("%s: chi-square = %.1f, want ≤ %.1f (99 degrees of freedom)", c.what, x2, limit))
		}
	}
	return problems, stats
}

func TestConsecutiveIDsLookRandom(t *testing.T) {
	for i, key := range statKeys {
		t.Run(fmt.Sprintf("key %d", i), func(t *testing.T) {
			p := mustNew(t, mustHex(t, key), 10)
			ids := encodeAll(t, p, 0, statCount)
			low := pow10[p.Length()-1]
			dp, ds := differenceProblems(ids, p.Size())
			sp, ss := serialProblems(ids, low, p.Size())
			for _, problem := range append(dp, sp...) {
				t.Error(problem)
			}
			t.Logf("differences: %s; serial: %s", ds, ss)
		})
	}
}

// TestStatisticsCatchWeakScramblers shows the tests above have teeth: each
// classic imitation of a scramble fails them.
func TestStatisticsCatchWeakScramblers(t *testing.T) {
	const low, size = 1_000_000_000, 9_000_000_000 // length 10
	reverse9 := func(x uint64) uint64 {
		var r uint64
		for range 9 {
			r, x = r*10+x%10, x/10
		}
		return r
	}
	for _, w := range []struct {
		name string
		f    func(n uint64) uint64
	}{
		{"sequential", func(n uint64) uint64 { return low + n }},
		{"affine mod size", func(n uint64) uint64 { return low + (n*7_777_777_777+123_456_789)%size }},
		{"digits reversed", func(n uint64) uint64 { return low*(1+n/low) + reverse9(n%low) }},
		{"quadratic mod size", func(n uint64) uint64 { return low + (n*n%size*3+n*7_777_777_777%size)%size }},
	} {
		t.Run(w.name, func(t *testing.T) {
			ids := make([]uint64, statCount)
			for n := range ids {
				ids[n] = w.f(uint64(n))
			}
			dp, _ := differenceProblems(ids, size)
			sp, _ := serialProblems(ids, low, size)
			if len(dp)+len(sp) == 0 {
				t.Errorf("%s passes as random; the statistics are too weak", w.name)
			}
			t.Logf("caught by: %q", append(dp, sp...))
		})
	}
}

// TestCycleWalkLength checks the package doc's 10/9 ≈ 1.11 FF1 calls per
// Encode over every sequence number of length 6. Over the whole subdomain
// it is exact: the walks cut every FF1 cycle into runs from one point of the
// subdomain to the next, so together they visit each of the 10^L strings
// once, 10^L calls for 9·10^(L−1) encodings.
func TestCycleWalkLength(t *testing.T) {
	p := mustNew(t, mustHex(t, testKey), 6)
	var scratch [16]byte
	var calls uint64
	longest := 0
	for n := range p.Size() {
		x, steps := p.low+n, 0
		for {
			x = p.f.encrypt(&scratch, x)
			steps++
			if x >= p.low {
				break
			}
		}
		calls += uint64(steps)
		longest = max(longest, steps)
	}
	if calls != pow10[6] {
		t.Errorf("%d FF1 calls to encode all %d sequence numbers, want exactly %d", calls, p.Size(), pow10[6])
	}
	t.Logf("length 6: %d FF1 calls for %d encodings (%.4f each), longest walk %d", calls, p.Size(), float64(calls)/float64(p.Size()), longest)
}
