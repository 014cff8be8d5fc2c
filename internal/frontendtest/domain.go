package frontendtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// SQLiteDomain opens a SQLite store in a temporary directory and the real
// segment allocator on it. tb's cleanup closes the allocator (which gives
// its unused IDs back) and then the store, after the cleanups registered
// later (a lease's, a front end's), as main closes them.
func SQLiteDomain(tb testing.TB) (*store.SQLite, *segment.Allocator) {
	tb.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(tb.TempDir(), "idalloc.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := alloc.Close(ctx); err != nil {
			tb.Errorf("close allocator: %v", err)
		}
	})
	return st, alloc
}
