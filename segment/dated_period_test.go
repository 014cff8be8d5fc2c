package segment_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// utc is an instant in UTC, to the millisecond.
func utc(y int, mo time.Month, d, h, mi, s, ms int) time.Time {
	return time.Date(y, mo, d, h, mi, s, ms*int(time.Millisecond), time.UTC)
}

// pow10 returns 10^n.
func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// TestDatedBoundaries takes IDs at chosen instants of the injected clock
// and pins each one's stamp and sequence number: every period's boundary
// in a zone ahead of UTC (Asia/Shanghai's day begins at 16:00 UTC), month
// ends, the leap day 2028-02-29, and Europe/Berlin's changes to and from
// summer time: in spring the hour 02 never comes; in autumn the hour 02
// is one period of two hours, and a minute stamp that comes round again
// continues its numbers where its counter stopped (dated's doc): step 10,
// so after a first range of 1..10 a stamp seen again goes on at 11.
func TestDatedBoundaries(t *testing.T) {
	const (
		shanghai = "Asia/Shanghai"
		berlin   = "Europe/Berlin"
	)
	type at struct {
		t          time.Time
		stamp, seq int64
	}
	tests := []struct {
		name   string
		zone   string
		period dated.Period
		steps  []at
	}{
		{"Shanghai year", shanghai, dated.Year, []at{
			{utc(2026, 12, 31, 15, 59, 59, 999), 2026, 1}, {utc(2026, 12, 31, 16, 0, 0, 0), 2027, 1}}},
		{"Shanghai month", shanghai, dated.Month, []at{
			{utc(2026, 11, 30, 15, 59, 59, 999), 202611, 1}, {utc(2026, 11, 30, 16, 0, 0, 0), 202612, 1}}},
		{"Shanghai day at 16:00 UTC", shanghai, dated.Day, []at{
			{utc(2026, 11, 26, 15, 59, 59, 999), 20261126, 1}, {utc(2026, 11, 26, 16, 0, 0, 0), 20261127, 1},
			{utc(2026, 11, 26, 16, 0, 0, 1), 20261127, 2}}},
		{"Shanghai hour", shanghai, dated.Hour, []at{
			{utc(2026, 11, 26, 15, 59, 59, 999), 2026112623, 1}, {utc(2026, 11, 26, 16, 0, 0, 0), 2026112700, 1}}},
		{"Shanghai minute", shanghai, dated.Minute, []at{
			{utc(2026, 11, 26, 15, 59, 59, 999), 202611262359, 1}, {utc(2026, 11, 26, 16, 0, 0, 0), 202611270000, 1}}},

		{"month end", "UTC", dated.Month, []at{
			{utc(2026, 4, 30, 23, 59, 59, 999), 202604, 1}, {utc(2026, 5, 1, 0, 0, 0, 0), 202605, 1}}},
		{"day at a month end", "UTC", dated.Day, []at{
			{utc(2026, 4, 30, 23, 59, 59, 999), 20260430, 1}, {utc(2026, 5, 1, 0, 0, 0, 0), 20260501, 1}}},
		{"leap day", "UTC", dated.Day, []at{
			{utc(2028, 2, 28, 23, 59, 59, 999), 20280228, 1}, {utc(2028, 2, 29, 0, 0, 0, 0), 20280229, 1},
			{utc(2028, 2, 29, 23, 59, 59, 999), 20280229, 2}, {utc(2028, 3, 1, 0, 0, 0, 0), 20280301, 1}}},
		{"leap February's end", "UTC", dated.Month, []at{
			{utc(2028, 2, 29, 23, 59, 59, 999), 202802, 1}, {utc(2028, 3, 1, 0, 0, 0, 0), 202803, 1}}},

		{"Berlin spring: no hour 02", berlin, dated.Hour, []at{
			{utc(2026, 3, 29, 0, 59, 59, 999), 2026032901, 1}, {utc(2026, 3, 29, 1, 0, 0, 0), 2026032903, 1}}},
		{"Berlin spring: a day of 23 hours", berlin, dated.Day, []at{
			{utc(2026, 3, 28, 22, 59, 59, 999), 20260328, 1}, {utc(2026, 3, 28, 23, 0, 0, 0), 20260329, 1},
			{utc(2026, 3, 29, 21, 59, 59, 999), 20260329, 2}, {utc(2026, 3, 29, 22, 0, 0, 0), 20260330, 1}}},
		{"Berlin autumn: hour 02 lasts two", berlin, dated.Hour, []at{
			{utc(2026, 10, 25, 0, 0, 0, 0), 2026102502, 1}, {utc(2026, 10, 25, 0, 59, 59, 999), 2026102502, 2},
			{utc(2026, 10, 25, 1, 0, 0, 0), 2026102502, 3}, {utc(2026, 10, 25, 1, 59, 59, 999), 2026102502, 4},
			{utc(2026, 10, 25, 2, 0, 0, 0), 2026102503, 1}}},
		{"Berlin autumn: a repeated minute continues", berlin, dated.Minute, []at{
			{utc(2026, 10, 25, 0, 30, 0, 0), 202610250230, 1}, {utc(2026, 10, 25, 0, 31, 0, 0), 202610250231, 1},
			{utc(2026, 10, 25, 1, 30, 0, 0), 202610250230, 11}, {utc(2026, 10, 25, 1, 30, 30, 0), 202610250230, 12},
			// 0231's first range was 1..20: fetched a minute after the one
			// before, the adaptive step had doubled.
			{utc(2026, 10, 25, 1, 31, 0, 0), 202610250231, 21}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clock := testclock.New(tt.steps[0].t)
			a, _ := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 10, Period: tt.period, TimeZone: tt.zone},
				segment.Config{WaitTimeout: 5 * time.Second})
			for _, s := range tt.steps {
				clock.Set(s.t)
				id, err := a.Next(ctx, "d")
				if err != nil {
					t.Fatalf("Next at %v: %v", s.t, err)
				}
				if stamp, seq := id/pow10(6), id%pow10(6); stamp != s.stamp || seq != s.seq {
					t.Errorf("Next at %v = %d: stamp %d, sequence %d; want %d, %d", s.t, id, stamp, seq, s.stamp, s.seq)
				}
			}
		})
	}
}

// TestDatedPeriodExhaustedThenNext: a period's numbers run out (start 5,
// length 1: five numbers), after which Next and NextN answer
// period_exhausted with the time until the next period, readable without
// words, without asking the store again and again; when the next period
// begins it is served from start again. Another instance spending the
// period is seen the same way.
func TestDatedPeriodExhaustedThenNext(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(utc(2026, 11, 26, 10, 0, 10, 0))
	a, st := newDatedAllocator(t, clock, segment.NewTag{AppTag: "d", Step: 2, Period: dated.Minute, Length: 1, Start: new(int64(5))},
		segment.Config{})
	for seq := int64(5); seq <= 9; seq++ {
		id, err := a.Next(ctx, "d")
		if want := 202611261000*10 + seq; err != nil || id != want {
			t.Fatalf("Next = %d, %v; want %d", id, err, want)
		}
	}
	for _, wait := range []time.Duration{50 * time.Second, 40 * time.Second} {
		_, err := a.Next(ctx, "d")
		var pe *dated.ExhaustedError
		if !errors.As(err, &pe) || pe.RetryAfter != wait || pe.Stamp != 202611261000 || !pe.Next.Equal(utc(2026, 11, 26, 10, 1, 0, 0)) {
			t.Fatalf("Next on a spent period = %v (%+v), want an ExhaustedError with RetryAfter %v", err, pe, wait)
		}
		if !errors.Is(err, dated.ErrPeriodExhausted) || errs.KindOf(err) != errs.PeriodExhausted {
			t.Errorf("Next on a spent period = %v, want kind period_exhausted", err)
		}
		if err := a.NextN(ctx, "d", make([]int64, 2)); !errors.Is(err, dated.ErrPeriodExhausted) {
			t.Errorf("NextN on a spent period = %v, want ErrPeriodExhausted", err)
		}
		clock.Add(10 * time.Second)
	}
	// The allocator took the last range itself: it knows, and asks no more.
	before := st.periodFetches.Load()
	for range 5 {
		if _, err := a.Next(ctx, "d"); !errors.Is(err, dated.ErrPeriodExhausted) {
			t.Fatalf("Next = %v, want ErrPeriodExhausted", err)
		}
	}
	if got := st.periodFetches.Load() - before; got != 0 {
		t.Errorf("%d fetches for a period known to be spent, want 0", got)
	}

	clock.Set(utc(2026, 11, 26, 10, 1, 0, 0))
	if id, err := a.Next(ctx, "d"); err != nil || id != 202611261001*10+5 {
		t.Errorf("Next in the next period = %d, %v; want %d", id, err, int64(202611261001*10+5))
	}

	// Spent by another instance: this one learns it from the store. Its
	// claim of 5 started the prefetch of 7..8 (5 is the prefetch point of
	// 5..6), which b's fetch must not race.
	waitUntil(t, "a's prefetch", func() bool { return snapshotOf(t, a, "d").Prefetched == 2 })
	b := alloctest.New(t, st, segment.Config{Now: clock.Now})
	var ids []int64
	for {
		id, err := b.Next(ctx, "d")
		if err != nil {
			if !errors.Is(err, dated.ErrPeriodExhausted) {
				t.Fatalf("Next on b = %v", err)
			}
			break
		}
		ids = append(ids, id)
	}
	// a holds 5..8 of period 10:01 and issued 5; b took 9.
	if want := []int64{202611261001*10 + 9}; !slices.Equal(ids, want) {
		t.Errorf("b issued %v, want %v", ids, want)
	}
	for seq := int64(6); seq <= 8; seq++ {
		if id, err := a.Next(ctx, "d"); err != nil || id != 202611261001*10+seq {
			t.Errorf("Next on a = %d, %v; want its buffered %d", id, err, 202611261001*10+seq)
		}
	}
	_, err := a.Next(ctx, "d")
	var pe *dated.ExhaustedError
	if !errors.As(err, &pe) || pe.RetryAfter != time.Minute {
		t.Errorf("Next on a period another spent = %v, want an ExhaustedError with RetryAfter 1m", err)
	}
}
