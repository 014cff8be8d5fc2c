package resp

import (
	"context"
	"database/sql"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// TestInfoStartFromTheStore: INFO's start: comes from the store's row, so
// it is right for tags another instance created (here: written to the
// store before this allocator started), and empty for a row from before
// the store recorded starts, whose first ID is unknown.
func TestInfoStartFromTheStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "idalloc.db")
	st, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tg := range []segment.Tag{
		{AppTag: "elsewhere", Step: 10, Start: 777},
		{AppTag: "cards", Step: 10, Start: 12_345_678, Format: segment.FormatFixedLength, Length: 8},
	} {
		if err := st.CreateTag(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	// The row an older idalloc leaves: no start.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.ExecContext(ctx, `INSERT INTO segments (app_tag, max_id, step) VALUES ('old', 70, 10)`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}

	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer alloc.Close(ctx)
	srv, err := New(Config{}, Deps{Segments: alloc})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln, 0) }()
	defer func() {
		stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	}()

	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer c.Close()
	// HSET on this instance, to show both paths give the same line.
	if err := c.HSet(ctx, "here", "step", 10, "start", 5).Err(); err != nil {
		t.Fatalf("HSET here: %v", err)
	}
	for tag, want := range map[string]string{
		"elsewhere":     "start:777\r\n",
		"cards":         "start:12345678\r\n",
		"test_business": "start:1\r\n",
		"here":          "start:5\r\n",
		"old":           "start:\r\n",
	} {
		info, err := c.Info(ctx, tag).Result()
		if err != nil || !strings.Contains(info, want) {
			t.Errorf("INFO %s = %q, %v; want a line %q", tag, info, err, want)
		}
	}
}
