package segment

import (
	"testing"
	"unsafe"
)

// spans keeps the spans of TestPaddedSpanLayout on the heap, where spans
// live: one that does not escape may sit on the stack, unaligned.
var spans []*span

// TestPaddedSpanLayout: a busy tag's span has its cursor alone on one
// cache line and its bounds on the next; a plain span is 48 bytes, an
// allocator size class.
func TestPaddedSpanLayout(t *testing.T) {
	if size := unsafe.Sizeof(paddedSpan{}); size != 2*cacheLine {
		t.Fatalf("paddedSpan is %d bytes, want %d", size, 2*cacheLine)
	}
	if off := unsafe.Offsetof(span{}.cursor); off != 0 {
		t.Fatalf("span's cursor at offset %d, want 0", off)
	}
	if size := unsafe.Sizeof(span{}); size != 48 {
		t.Errorf("span is %d bytes, want 48", size)
	}
	for range 100 {
		s := newSpan(1, 100, 100, true)
		spans = append(spans, s)
		cursor, start := uintptr(unsafe.Pointer(&s.cursor)), uintptr(unsafe.Pointer(&s.start))
		if cursor%cacheLine != cacheLine-8 || start%cacheLine != 0 || start/cacheLine != cursor/cacheLine+1 {
			t.Fatalf("cursor at %#x, bounds from %#x: want the cursor ending one line and the bounds opening the next", cursor, start)
		}
	}
	spans = nil
}
