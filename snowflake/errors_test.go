package snowflake

import (
	"fmt"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
)

// TestDescribe finds the words a client reads under the detail the
// generator and layout add for logs, and nothing in the errors that only
// stop a start.
func TestDescribe(t *testing.T) {
	l, err := NewLayout(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, negative := l.Decompose(-1)
	_, badBits := NewLayout(time.Time{}, 30)
	tests := []struct {
		name     string
		err      error
		wantKind errs.Kind
		wantMsg  string
		wantOK   bool
	}{
		{"negative id", negative, errs.BadRequest, "invalid id: want a non-negative 64-bit snowflake ID", true},
		{"drift try later", fmt.Errorf("clock is 20ms behind the last issued timestamp 5: %w", ErrClockDriftTryLater), errs.ClockBackwards, "clock moved backwards: retry later or on another instance", true},
		{"drift too large", ErrClockDriftTooLargeToRecover, errs.ClockBackwards, "clock moved backwards too far: snowflake stopped on this instance, use another instance", true},
		{"fenced", ErrFenced, errs.Unavailable, "worker lease not confirmed: retry", true},
		{"layout mismatch", fmt.Errorf("cluster %q uses epoch 0 ms and 10 worker bits, this holder 1000 ms and 10: %w", "c", ErrLayoutMismatch), errs.Unavailable, "snowflake layout differs from the cluster's", true},
		{"invalid layout", badBits, "", "", false},
		{"time exhausted", ErrTimeExhausted, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kind errs.Kind
			var msg string
			e, ok := errs.Describe(tt.err)
			if ok {
				kind, msg = e.Kind, e.Error()
			}
			if kind != tt.wantKind || msg != tt.wantMsg || ok != tt.wantOK {
				t.Errorf("Describe(%v) = %q, %q, %v; want %q, %q, %v", tt.err, kind, msg, ok, tt.wantKind, tt.wantMsg, tt.wantOK)
			}
		})
	}
}
