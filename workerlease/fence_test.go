package workerlease

import (
	"testing"
	"time"
)

// openSession returns a session on a memory store, closed at cleanup. It
// runs on the real clock: its first renewal leaves a fence open for 27s,
// longer than any allocation test or benchmark run.
func openSession(tb testing.TB) *Session {
	tb.Helper()
	s := mustSession(tb, NewMemoryStore(nil), Config{}, SessionConfig{})
	tb.Cleanup(func() { closeSession(tb, s, 0) })
	return s
}

// TestFenceDoesNotAllocate: Fence runs before every snowflake ID, under the
// generator's lock, so it must cost no allocation.
func TestFenceDoesNotAllocate(t *testing.T) {
	s := openSession(t)
	now := time.Now()
	if !s.Fence(now, now.UnixMilli()) {
		t.Fatalf("Fence() = false on a fresh session, want true")
	}
	if got := testing.AllocsPerRun(1000, func() { s.Fence(now, now.UnixMilli()) }); got != 0 {
		t.Errorf("Fence allocates %v times per call, want 0", got)
	}
}

func BenchmarkFence(b *testing.B) {
	s := openSession(b)
	now := time.Now()
	ms := now.UnixMilli()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !s.Fence(now, ms) {
				b.Fatal("Fence() = false")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !s.Fence(now, ms) {
					b.Error("Fence() = false")
					return
				}
			}
		})
	})
}
