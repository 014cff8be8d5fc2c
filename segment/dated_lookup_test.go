package segment_test

import (
	"context"
	"testing"

	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

// TestDatedFormat: DatedFormat answers a served dated tag's format with
// its settings, and nil for another format, an unknown tag, and on an
// allocator with no dated tag at all; it allocates nothing.
func TestDatedFormat(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(utc(2026, 11, 26, 15, 0, 0, 0))
	st := newPeriodStore(clock)
	a := alloctest.New(t, st, segment.Config{Now: clock.Now})
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "seq", Step: 10}); err != nil {
		t.Fatal(err)
	}
	if f := a.DatedFormat("seq"); f != nil {
		t.Errorf("DatedFormat(seq) before any dated tag = %v, want nil", f)
	}
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "ord", Format: segment.FormatDated,
		TimeZone: "Asia/Shanghai", Prefix: "ORD", Separator: "-"}); err != nil {
		t.Fatal(err)
	}
	f := a.DatedFormat("ord")
	if f == nil || f.Period() != "day" || f.TimeZone() != "Asia/Shanghai" || f.Prefix() != "ORD" || f.Separator() != "-" || f.Numeric() {
		t.Fatalf("DatedFormat(ord) = %+v, want day, Asia/Shanghai, ORD, -", f)
	}
	for _, tag := range []string{"seq", "nope", "bad tag"} {
		if f := a.DatedFormat(tag); f != nil {
			t.Errorf("DatedFormat(%q) = %v, want nil", tag, f)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = a.DatedFormat("ord"); _ = a.DatedFormat("seq") }); n != 0 {
		t.Errorf("DatedFormat allocates %.0f times, want 0", n)
	}
}
