package snowflake_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

// Decompose must accept or refuse any int64 without panicking, and what it
// accepts must compose back to the same ID.
func FuzzDecompose(f *testing.F) {
	for _, id := range []int64{0, 1, -1, 1 << 22, 117786739874988124, 1<<63 - 1, -1 << 63} {
		f.Add(id, 10)
	}
	f.Add(int64(12345), 1)
	f.Add(int64(12345), 21)
	f.Fuzz(func(t *testing.T, id int64, bits int) {
		l, err := snowflake.NewLayout(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), bits)
		if err != nil {
			return
		}
		p, err := l.Decompose(id)
		if err != nil {
			if !errors.Is(err, snowflake.ErrInvalidID) {
				t.Fatalf("Decompose(%d): got %v, want nil or ErrInvalidID", id, err)
			}
			return
		}
		back, err := l.Compose(p.TimestampMS, p.WorkerID, p.Sequence)
		if err != nil || back != id {
			t.Fatalf("Compose(Decompose(%d)) got %d, %v; want %d", id, back, err, id)
		}
	})
}
