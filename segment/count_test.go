package segment_test

import (
	"errors"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// TestCountLimit pins the rule of a batch's count and its words, which
// HTTP and RESP both answer with.
func TestCountLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		l       segment.CountLimit
		wantMax int
		wantMsg string
	}{
		{"zero value", segment.CountLimit{}, segment.DefaultMaxBatch, "invalid count: must be an integer from 1 to 1000"},
		{"max 0", segment.NewCountLimit(0), segment.DefaultMaxBatch, "invalid count: must be an integer from 1 to 1000"},
		{"max 5", segment.NewCountLimit(5), 5, "invalid count: must be an integer from 1 to 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.Max(); got != tc.wantMax {
				t.Errorf("Max() = %d, want %d", got, tc.wantMax)
			}
			for _, n := range []int{1, tc.wantMax} {
				if err := tc.l.Check(n); err != nil {
					t.Errorf("Check(%d) = %v, want nil", n, err)
				}
			}
			for _, n := range []int{-1, 0, tc.wantMax + 1} {
				err := tc.l.Check(n)
				e, ok := errs.Describe(err)
				if !ok || e.Kind != errs.BadRequest || e.Field != "count" || err.Error() != tc.wantMsg || !errors.Is(err, segment.ErrInvalidCount) {
					t.Errorf("Check(%d) = %v, want bad_request on count %q, ErrInvalidCount", n, err, tc.wantMsg)
				}
			}
			if err := tc.l.Err(); err.Error() != tc.wantMsg {
				t.Errorf("Err() = %v, want %q", err, tc.wantMsg)
			}
		})
	}
}
