package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// regionServer is a real allocator of region on a SQLite database of its
// own (test_business seeded, step 100000), served over HTTP.
func regionServer(t *testing.T, region segment.Region) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	st := storetest.SQLite().Open(t)
	alloc, err := segment.New(ctx, st, segment.Config{Region: region})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	srv, err := New(Config{MaxRange: 30_000}, Deps{Segments: alloc, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// TestTinyidSegmentsInRegions: in region r of R, Tinyid's segments carry
// delta R and remainder r, and Tinyid's own client loop, which aligns to
// the remainder and steps by delta, takes only numbers ≡ r from each
// region's database: two regions' clients never share an ID. /alloc's
// as=ranges is refused there, naming as.
func TestTinyidSegmentsInRegions(t *testing.T) {
	const perRegion = 70_000 // more than two of max_range's segments
	seen := map[int64]int64{}
	for id := range int64(2) {
		ts := regionServer(t, segment.Region{Count: 2, ID: id})
		rec := compatDo(ts.Config.Handler, "GET", "/tinyid/id/nextSegmentId?bizType=test_business", "")
		var seg struct {
			Data struct{ MaxID, LoadingID, CurrentID, Delta, Remainder int64 }
		}
		// The first ID is 2 in region 0 and 1 in region 1: currentId is
		// the number before it.
		if err := json.Unmarshal(rec.Body.Bytes(), &seg); err != nil || seg.Data.Delta != 2 || seg.Data.Remainder != id ||
			seg.Data.CurrentID != 1-id || seg.Data.MaxID%2 != id {
			t.Fatalf("region %d: nextSegmentId %q (%v), want delta 2 and remainder %d from currentId %d", id, rec.Body, err, id, 1-id)
		}
		c := newTinyidClient(strings.TrimPrefix(ts.URL, "http://"), "t0k", "test_business")
		// Every ID ≡ r above the segment nextSegmentId took. Not always in
		// order: like Tinyid's, the client fetches at once when its current
		// segment is spent before the background load came back, and then
		// serves the two segments in the order they arrive.
		for range perRegion {
			v, err := c.nextID()
			if err != nil {
				t.Fatal(err)
			}
			if v%2 != id || v <= seg.Data.MaxID {
				t.Fatalf("region %d: Tinyid's client got %d, want a number ≡ %d (mod 2) above %d", id, v, id, seg.Data.MaxID)
			}
			if other, dup := seen[v]; dup {
				t.Fatalf("ID %d from regions %d and %d", v, other, id)
			}
			seen[v] = id
		}
		c.close()
		rec = compatDo(ts.Config.Handler, "GET", "/alloc?app_tag=test_business&count=5&as=ranges", "")
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"as"`) {
			t.Errorf("region %d: as=ranges answered %d %s, want 400 naming as", id, rec.Code, rec.Body)
		}
	}
}
