package segment_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// TestCheckRow pins what no row of the segments table may hold, in the
// words a migration report prints, and the sentinel each is.
func TestCheckRow(t *testing.T) {
	key := make([]byte, 32)
	tests := []struct {
		name       string
		tag        segment.Tag
		wantReason string // "" when valid
		wantIs     error
	}{
		{"sequential", segment.Tag{AppTag: "ok", Step: 1}, "", nil},
		{"beyond the allocator's caps", segment.Tag{AppTag: "ok", Step: 1 << 40, Start: segment.MaxUsableID + 10, MaxID: segment.MaxUsableID + 9}, "", nil},
		{"scrambled with its key", segment.Tag{AppTag: "ok", Step: 1, Format: segment.FormatScrambled, Length: 8, FormatKey: key}, "", nil},
		{"empty name", segment.Tag{Step: 1}, "empty name", segment.ErrInvalidTag},
		{"long name", segment.Tag{AppTag: strings.Repeat("a", 65), Step: 1}, "name longer than idalloc's 64 characters (65 bytes)", segment.ErrInvalidTag},
		{"bad character", segment.Tag{AppTag: "a/b", Step: 1}, "name has a character outside [A-Za-z0-9_.:-]", segment.ErrInvalidTag},
		{"step 0", segment.Tag{AppTag: "ok"}, "step 0 is below 1", segment.ErrInvalidStep},
		{"negative start", segment.Tag{AppTag: "ok", Step: 1, Start: -1}, "start -1 is below 1", segment.ErrInvalidStart},
		{"negative max_id", segment.Tag{AppTag: "ok", Step: 1, MaxID: -1}, "max_id -1 is negative", segment.ErrInvalidStart},
		{"long description", segment.Tag{AppTag: "ok", Step: 1, Description: strings.Repeat("é", 257)}, "description longer than 256 characters", segment.ErrInvalidDescription},
		{"unknown format", segment.Tag{AppTag: "ok", Step: 1, Format: "hex"}, "number format: invalid format: must be sequential, fixed_length, scrambled or dated", segment.ErrInvalidFormat},
		{"step before format", segment.Tag{AppTag: "ok", Format: "hex"}, "step 0 is below 1", segment.ErrInvalidStep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := segment.CheckRow(tt.tag)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("CheckRow = %v, want nil", err)
				}
				return
			}
			e, ok := errs.Describe(err)
			if !ok || e.Kind != errs.BadRequest || e.Reason != tt.wantReason || !errors.Is(err, tt.wantIs) {
				t.Errorf("CheckRow = %v, want bad_request %q (%v)", err, tt.wantReason, tt.wantIs)
			}
		})
	}
	// A key that is not one is a fault, named without its bytes.
	err := segment.CheckRow(segment.Tag{AppTag: "ok", Step: 1, Format: segment.FormatScrambled, Length: 8})
	if _, ok := errs.Describe(err); ok || err == nil || !strings.HasPrefix(err.Error(), "number format: ") {
		t.Errorf("CheckRow(scrambled without a key) = %v, want a fault starting %q", err, "number format: ")
	}
}
