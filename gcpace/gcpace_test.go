package gcpace

import "testing"

// TestGCPercentFor: the pace lets the heap grow by about gcHeadroom between
// collections: 400 for a small live heap, 100 from gcHeadroom on.
func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		live uint64
		want int
	}{
		{0, 400},       // before the first collection
		{1 * mb, 400},  // most instances
		{3 * mb, 400},  // a quarter of the headroom
		{4 * mb, 300},  // 12/4
		{5 * mb, 200},  // 240, in steps of 50
		{8 * mb, 150},  // 150
		{12 * mb, 100}, // the headroom: Go's default
		{50 * mb, 100}, // 100,000 tags: never below Go's default
	}
	for _, tt := range tests {
		if got := gcPercentFor(tt.live); got != tt.want {
			t.Errorf("gcPercentFor(%d MB) = %d, want %d", tt.live/mb, got, tt.want)
		}
	}
}
