package segment

import (
	"math"
	"testing"
)

// TestRegionIndexes: index and indexBelow find the region's nearest
// numbers above and below any n, negative ones included (a range's first
// number minus ID may be), and number undoes them.
func TestRegionIndexes(t *testing.T) {
	for _, count := range []int64{1, 2, 3, 7, 1024} {
		for id := int64(0); id < count; id += max(1, count/5) {
			r := Region{Count: count, ID: id}
			for n := int64(-2 * count); n < 3*count+5; n++ {
				above, below := r.number(r.index(n)), r.number(r.indexBelow(n))
				if above < n || above-count >= n || mod(above, count) != id {
					t.Errorf("%v: number(index(%d)) = %d, want the least ≡ %d at or above it", r, n, above, id)
				}
				if below > n || below+count <= n || mod(below, count) != id {
					t.Errorf("%v: number(indexBelow(%d)) = %d, want the greatest ≡ %d at or below it", r, n, below, id)
				}
			}
		}
	}
}

// mod is n mod m in 0..m−1, for negative n too.
func mod(n, m int64) int64 { return (n%m + m) % m }

// TestRegionDelta: a fetch of step IDs moves max_id by step·Count, and a
// step whose product would pass int64 by the most that fits.
func TestRegionDelta(t *testing.T) {
	cases := []struct {
		r          Region
		step, want int64
	}{
		{Region{}, 0, 0},
		{Region{}, 1000, 1000},
		{Region{Count: 2, ID: 1}, 1000, 2000},
		{Region{Count: 7, ID: 3}, 5, 35},
		{Region{Count: 3}, math.MaxInt64 / 2, math.MaxInt64 / 3 * 3},
	}
	for _, c := range cases {
		if got := c.r.delta(c.step); got != c.want {
			t.Errorf("%v.delta(%d) = %d, want %d", c.r, c.step, got, c.want)
		}
	}
}
