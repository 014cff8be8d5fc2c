package snowflake

import (
	"errors"
	"testing"
	"time"
)

// TestLayoutMismatchSaysWhichLayouts: the refusal names both layouts as
// the snowflake.* keys do, never the record's 100+bits encoding of js53.
func TestLayoutMismatchSaysWhichLayouts(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	def, err := NewLayout(epoch, 10)
	if err != nil {
		t.Fatal(err)
	}
	js, err := NewJS53Layout(epoch, 6)
	if err != nil {
		t.Fatal(err)
	}
	if got := js.RecordedWorkerBits(); got != 106 {
		t.Errorf("a JS53 layout of 6 worker bits is recorded as %d, want 106", got)
	}
	if got := def.RecordedWorkerBits(); got != 10 {
		t.Errorf("a default layout of 10 worker bits is recorded as %d, want 10", got)
	}
	for _, c := range []struct {
		name           string
		recorded, have Layout
		want           string
	}{
		{"js53 recorded, default offered", js, def,
			`cluster "c" records layout js53, epoch 2026-01-01T00:00:00Z, 6 worker bits; this instance has layout default, epoch 2026-01-01T00:00:00Z, 10 worker bits: snowflake layout differs from the cluster's`},
		{"default recorded, js53 offered", def, js,
			`cluster "c" records layout default, epoch 2026-01-01T00:00:00Z, 10 worker bits; this instance has layout js53, epoch 2026-01-01T00:00:00Z, 6 worker bits: snowflake layout differs from the cluster's`},
	} {
		err := LayoutMismatch("c", c.recorded.Epoch.UnixMilli(), c.recorded.RecordedWorkerBits(), c.have.Epoch.UnixMilli(), c.have.RecordedWorkerBits())
		if !errors.Is(err, ErrLayoutMismatch) || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
}
