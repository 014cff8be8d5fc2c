package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// countingStore is a real store that counts tag-list queries and can fail
// them.
type countingStore struct {
	store.Store
	lists atomic.Int64
	down  atomic.Bool
}

func (s *countingStore) TagsSince(ctx context.Context, since time.Time, after string, limit int) ([]segment.Tag, time.Time, error) {
	s.lists.Add(1)
	if s.down.Load() {
		return nil, time.Time{}, errors.New("store down")
	}
	return s.Store.TagsSince(ctx, since, after, limit)
}

type tagsAnswer struct {
	RespCode int       `json:"resp_code"`
	Tags     []tagJSON `json:"tags"`
}

func getTags(tb testing.TB, h http.Handler) tagsAnswer {
	tb.Helper()
	rec := serve(h, "GET", "/tags", "", loopback, "Bearer s3cret")
	var a tagsAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || rec.Code != 200 || a.RespCode != 0 {
		tb.Fatalf("GET /tags: %d %s (%v), want 200 success", rec.Code, rec.Body, err)
	}
	return a
}

// TestListTagsFromReload: GET /tags answers from the allocator's last
// tag-list reload and the tags created since, on both stores: a flood of it
// queries the store not once, and it still answers while the store is down.
// Rows another instance writes show after the next reload.
func TestListTagsFromReload(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			db := d.NewDB(t)
			st := &countingStore{Store: db.Open(t)}
			alloc, err := segment.New(ctx, st, segment.Config{TagRefresh: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = alloc.Close(ctx) })
			srv, err := New(Config{AdminToken: "s3cret"}, Deps{Segments: alloc, Store: st})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			h := srv.Handler()

			st.down.Store(true) // from here on, a tag-list query fails
			if rec := serve(h, "GET", "/alloc?app_tag=test_business", "", loopback, ""); rec.Code != 200 {
				t.Fatalf("alloc: %d %s", rec.Code, rec.Body)
			}
			if rec := serve(h, "POST", "/tags", `{"app_tag":"order","step":10,"start":100,"description":"orders"}`, loopback, "Bearer s3cret"); rec.Code != 201 {
				t.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			before, began := st.lists.Load(), time.Now()
			var got tagsAnswer
			for range 200 {
				got = getTags(t, h)
			}
			// The refresher's own reloads (every 50ms) fail meanwhile; the
			// 200 requests must not add one each.
			refresher := int64(time.Since(began)/(50*time.Millisecond)) + 1
			if n := st.lists.Load() - before; n > refresher {
				t.Errorf("200 GET /tags queried the tag list %d times, want at most the refresher's %d", n, refresher)
			}
			if len(got.Tags) != 2 {
				t.Fatalf("tags: %+v, want order and test_business", got.Tags)
			}
			order, tb := got.Tags[0], got.Tags[1]
			if order.AppTag != "order" || order.MaxID != 99 || order.Step != 10 || order.Description != "orders" || order.UpdateTime == "" {
				t.Errorf("created row %+v, want order, max_id 99, step 10, description orders", order)
			}
			if tb.AppTag != "test_business" || tb.MaxID != 0 || tb.Step != 100000 || tb.CurrentStep != 100000 || tb.Left != 99999 {
				t.Errorf("seeded row %+v, want test_business as last reloaded (max_id 0, step 100000) with current_step 100000 and left 99999", tb)
			}

			// Another instance fetches and creates; the next reload shows it.
			other := db.Open(t)
			if _, err := other.Fetch(ctx, "test_business", segment.MaxUsableID, 0); err != nil {
				t.Fatal(err)
			}
			if err := other.CreateTag(ctx, segment.Tag{AppTag: "zeta", Step: 5, Start: 1}); err != nil {
				t.Fatal(err)
			}
			st.down.Store(false)
			deadline := time.Now().Add(10 * time.Second)
			for {
				got = getTags(t, h)
				if len(got.Tags) == 3 && got.Tags[1].MaxID == 200000 && got.Tags[2].AppTag == "zeta" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("10s after another instance's writes, GET /tags has %+v, want test_business at max_id 200000 and zeta", got.Tags)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
