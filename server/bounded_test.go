package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// boundedInstance is one instance of the real allocator and server on a
// store, stopped by stop (a graceful restart gives its unused IDs back).
type boundedInstance struct {
	h    http.Handler
	stop func()
}

func startBounded(tb testing.TB, st store.Store) boundedInstance {
	tb.Helper()
	ctx := context.Background()
	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(Config{AdminToken: "s3cret"}, Deps{Segments: alloc, Store: st})
	if err != nil {
		tb.Fatal(err)
	}
	stop := func() {
		_ = s.Close()
		if err := alloc.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
	}
	return boundedInstance{h: s.Handler(), stop: stop}
}

// TestBoundedBatchOverHTTP is issue 29's report, on each store driver: a
// fixed_length tag of length 2 (IDs 10..99), one ID taken, then
// /alloc?count=100 and count=1000 as ranges are refused with nothing taken
// and nothing wasted (resp_code 1, kind bad_request naming count, and the
// 89 left), and single IDs then get all 89, across graceful restarts; at
// the end the tag is exhausted (resp_code 10), GET /tags shows max_id 99
// and none wasted, and max_id is never below start − 1 nor past 99. With
// step 10 the batch's own fetch finds the end, with step 1000 the first
// fetch does. Tinyid's nextId with batchSize=100 is refused alike.
func TestBoundedBatchOverHTTP(t *testing.T) {
	for _, d := range storetest.Drivers() {
		for _, step := range []string{"10", "1000"} {
			t.Run(d.Name+"/step "+step, func(t *testing.T) {
				db := d.NewDB(t)
				inst := startBounded(t, db.Open(t))
				get := func(target string) (int, map[string]any) {
					t.Helper()
					rec := serve(inst.h, "GET", target, "", loopback, bearer)
					var body map[string]any
					if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
						t.Fatalf("GET %s: %d %q is not JSON", target, rec.Code, rec.Body.String())
					}
					return rec.Code, body
				}
				checkListing := func(wantMax float64, wantWasted float64) {
					t.Helper()
					_, body := get("/tags")
					for _, row := range body["tags"].([]any) {
						tg := row.(map[string]any)
						if tg["app_tag"] != "fx" {
							continue
						}
						if m := tg["max_id"].(float64); m < tg["start"].(float64)-1 || m > 99 || (wantMax != 0 && m != wantMax) {
							t.Errorf("GET /tags: max_id %v with start %v; want from start − 1 to 99 (%v)", m, tg["start"], wantMax)
						}
						if tg["wasted"] != wantWasted {
							t.Errorf("GET /tags: wasted %v, want %v", tg["wasted"], wantWasted)
						}
						return
					}
					t.Fatal("GET /tags does not list fx")
				}
				rec := serve(inst.h, "POST", "/tags", `{"app_tag":"fx","step":`+step+`,"format":"fixed_length","length":2}`, loopback, bearer)
				if rec.Code != http.StatusCreated {
					t.Fatalf("POST /tags: %d %s", rec.Code, rec.Body.String())
				}
				if code, body := get("/alloc?app_tag=fx"); code != 200 || body["id"] != 10.0 {
					t.Fatalf("first ID: %d %v, want 10", code, body)
				}
				refused := func(target string, left float64) {
					t.Helper()
					code, body := get(target)
					if code != 400 || body["resp_code"] != 1.0 || body["kind"] != "bad_request" || body["field"] != "count" ||
						body["left"] != left || !strings.Contains(body["msg"].(string), "at most "+strconv.Itoa(int(left))+":") {
						t.Fatalf("GET %s: %d %v; want 400, resp_code 1, bad_request naming count, left %v", target, code, body, left)
					}
				}
				refused("/alloc?app_tag=fx&count=100", 89)
				refused("/alloc?app_tag=fx&count=1000&as=ranges", 89)
				// Tinyid's routes answer its envelope, with the words.
				for _, route := range []string{"/tinyid/id/nextId", "/tinyid/id/nextIdSimple"} {
					rec := serve(inst.h, "GET", route+"?bizType=fx&batchSize=100", "", loopback, "")
					if rec.Code != 400 || !strings.Contains(rec.Body.String(), "invalid count: must be at most 89:") {
						t.Fatalf("%s batchSize=100: %d %s; want 400 saying at most 89", route, rec.Code, rec.Body.String())
					}
				}
				checkListing(0, 0)

				// A restart, then some single IDs, another restart, the rest.
				next := int64(11)
				issue := func(n int) {
					t.Helper()
					for range n {
						if code, body := get("/alloc?app_tag=fx&count=1"); code != 200 || body["id"] != float64(next) {
							t.Fatalf("count=1: %d %v, want ID %d", code, body, next)
						}
						next++
					}
				}
				inst.stop()
				inst = startBounded(t, db.Open(t))
				checkStatus(t, inst.h, "10") // the row's, 89 given back
				refused("/alloc?app_tag=fx&count=100", 89)
				issue(40)
				inst.stop()
				inst = startBounded(t, db.Open(t))
				refused("/alloc?app_tag=fx&count=1000&as=ranges", 49)
				issue(49)
				if code, body := get("/alloc?app_tag=fx"); code != 409 || body["kind"] != "exhausted" {
					t.Errorf("after 99: %d %v, want 409 exhausted", code, body)
				}
				if code, body := get("/alloc?app_tag=fx&count=2"); code != 409 || body["kind"] != "exhausted" {
					t.Errorf("a batch after 99: %d %v, want 409 exhausted", code, body)
				}
				inst.stop()
				inst = startBounded(t, db.Open(t))
				defer inst.stop()
				checkStatus(t, inst.h, "99")
				if code, body := get("/alloc?app_tag=fx"); code != 409 || body["kind"] != "exhausted" {
					t.Errorf("after a restart on the spent tag: %d %v, want 409 exhausted", code, body)
				}
				checkListing(99, 0)
			})
		}
	}
}

// checkStatus fails tb unless GET /status shows fx's max_id as want: an
// instance that has not fetched the tag yet shows the row's.
func checkStatus(tb testing.TB, h http.Handler, want string) {
	tb.Helper()
	rec := serve(h, "GET", "/status", "", loopback, bearer)
	var body struct {
		Tags []struct {
			AppTag string `json:"app_tag"`
			MaxID  string `json:"max_id"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		tb.Fatalf("GET /status: %d %q", rec.Code, rec.Body.String())
	}
	for _, tg := range body.Tags {
		if tg.AppTag == "fx" && tg.MaxID != want {
			tb.Errorf("GET /status: fx's max_id %s, want %s", tg.MaxID, want)
		}
	}
}
