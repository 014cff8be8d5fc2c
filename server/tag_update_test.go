package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestUpdateTag: PATCH /tags/{app_tag} changes step and description and
// answers the tag as GET /tags shows it.
func TestUpdateTag(t *testing.T) {
	tests := []struct {
		name, body string
		want       map[string]any
	}{
		{"both", `{"step":2000,"description":"orders, ✓"}`, map[string]any{"step": 2000.0, "description": "orders, ✓"}},
		{"step alone", `{"step":5}`, map[string]any{"step": 5.0, "description": ""}},
		{"description alone", `{"description":"orders"}`, map[string]any{"step": 1000.0, "description": "orders"}},
		{"null step, as not given", `{"step":null,"description":"x"}`, map[string]any{"step": 1000.0, "description": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.do(t, "PATCH", "/tags/order", tt.body, adminAuth...)
			if got.status != http.StatusOK || got.code() != 0.0 || got.body["msg"] != "success" {
				t.Fatalf("got %d %s, want 200 success", got.status, got.raw)
			}
			want := map[string]any{"app_tag": "order", "format": "sequential", "length": 0.0, "start": nil,
				"max_id": 1000.0, "current_step": 2000.0, "left": 42.0, "update_time": "2026-11-21T10:00:00.123Z",
				"given_back": 0.0, "wasted": 0.0}
			for k, v := range tt.want {
				want[k] = v
			}
			for k, v := range want {
				if got.body[k] != v {
					t.Errorf("%s = %v, want %v", k, got.body[k], v)
				}
			}
			// The same fields as a row of GET /tags, and no others.
			list := rg.do(t, "GET", "/tags", "", adminAuth...)
			row := list.body["tags"].([]any)[0].(map[string]any)
			for k := range row {
				if _, ok := got.body[k]; !ok {
					t.Errorf("the answer lacks %q, which GET /tags shows", k)
				}
			}
			if len(got.body) != len(row)+2 { // resp_code, msg
				t.Errorf("the answer %s has other fields than GET /tags' row %v", got.raw, row)
			}
		})
	}
}

// TestUpdateTagRefused: what PATCH cannot change, or cannot read, is
// refused naming the field and why, and reaches no dependency; the
// domain's refusals come in its words.
func TestUpdateTagRefused(t *testing.T) {
	const fixedNumbers = "never changes once the tag is created: its IDs are made in it"
	const fixedDated = "never changes once the tag is created: a dated tag's IDs carry it"
	tests := []struct {
		name, target, body string
		status             int
		code               float64
		field              string // "" for none
		msg                string // a substring
		reached            bool   // the allocator was asked
	}{
		{"format", "/tags/order", `{"step":10,"format":"scrambled"}`, 400, 1, "format", "invalid format: " + fixedNumbers, false},
		{"length", "/tags/order", `{"length":8}`, 400, 1, "length", "invalid length: " + fixedNumbers, false},
		{"start", "/tags/order", `{"start":5}`, 400, 1, "start", "invalid start: never changes once the tag is created: IDs were issued from it", false},
		{"max_id", "/tags/order", `{"max_id":0}`, 400, 1, "max_id", "invalid max_id: never changes by an update: lowering it would repeat IDs; move it forward with idalloc advance", false},
		{"app_tag", "/tags/order", `{"app_tag":"order"}`, 400, 1, "app_tag", "invalid app_tag: never changes: a tag is never renamed", false},
		{"period", "/tags/order", `{"period":"day"}`, 400, 1, "period", "invalid period: " + fixedDated, false},
		{"time_zone", "/tags/order", `{"time_zone":"UTC"}`, 400, 1, "time_zone", "invalid time_zone: " + fixedDated, false},
		{"prefix", "/tags/order", `{"prefix":"ORD"}`, 400, 1, "prefix", "invalid prefix: " + fixedDated, false},
		{"separator", "/tags/order", `{"separator":"-"}`, 400, 1, "separator", "invalid separator: " + fixedDated, false},
		{"a figure", "/tags/order", `{"current_step":5}`, 400, 1, "current_step", "invalid current_step: a figure of the tag's use", false},
		{"another figure", "/tags/order", `{"step":5,"left":1}`, 400, 1, "left", "invalid left: a figure of the tag's use", false},
		{"unknown field", "/tags/order", `{"steps":5}`, 400, 1, "body", `invalid body: unknown field "steps"`, false},
		{"step as text", "/tags/order", `{"step":"10"}`, 400, 1, "step", "invalid step: want an integer", false},
		{"description not text", "/tags/order", `{"description":"\udc00"}`, 400, 1, "description", "invalid description: must be UTF-8 text", false},
		{"not JSON", "/tags/order", `{"step":`, 400, 1, "body", "invalid body: want a JSON object", false},
		{"invalid tag", "/tags/a%20b", `{"step":10}`, 400, 1, "app_tag", "invalid app_tag", false},
		{"nothing", "/tags/order", `{}`, 400, 1, "", "nothing to change: give step, description or both", true},
		{"no body", "/tags/order", ``, 400, 1, "", "nothing to change", true},
		{"step 0", "/tags/order", `{"step":0}`, 400, 1, "step", "invalid step: must be from 1 to 1000000", true},
		{"a line break", "/tags/order", `{"description":"a\nb"}`, 400, 1, "description", "invalid description: must be UTF-8 text", true},
		{"unknown tag", "/tags/nope", `{"step":10}`, 404, 2, "app_tag", "unknown app_tag", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.do(t, "PATCH", tt.target, tt.body, adminAuth...)
			msg, _ := got.body["msg"].(string)
			field, _ := got.body["field"].(string)
			if got.status != tt.status || got.code() != tt.code || field != tt.field || !strings.Contains(msg, tt.msg) {
				t.Errorf("got %d %s, want %d resp_code %v field %q and a msg with %q", got.status, got.raw, tt.status, tt.code, tt.field, tt.msg)
			}
			if reached := slices.ContainsFunc(rg.seg.list(), func(c string) bool { return strings.HasPrefix(c, "UpdateTag") }); reached != tt.reached {
				t.Errorf("allocator asked: %v (%q), want %v", reached, rg.seg.list(), tt.reached)
			}
			if tg := rg.seg.tags["order"]; tg.Step != 1000 || tg.Description != "" {
				t.Errorf("order after the refusal: %+v, want step 1000 and no description", tg)
			}
		})
	}
}

// TestUpdateTagMethods: the route takes PATCH only, and says so.
func TestUpdateTagMethods(t *testing.T) {
	rg := newRig(t, nil)
	for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
		got := rg.do(t, m, "/tags/order", `{"step":10}`, adminAuth...)
		if got.status != http.StatusMethodNotAllowed || got.code() != 9.0 || got.header.Get("Allow") != "PATCH" {
			t.Errorf("%s /tags/order: got %d %s Allow %q, want 405 resp_code 9 Allow PATCH", m, got.status, got.raw, got.header.Get("Allow"))
		}
	}
	if got := rg.do(t, "PATCH", "/tags", `{"step":10}`, adminAuth...); got.status != http.StatusMethodNotAllowed || got.header.Get("Allow") != "GET, POST" {
		t.Errorf("PATCH /tags: got %d Allow %q, want 405 Allow GET, POST", got.status, got.header.Get("Allow"))
	}
}

// TestUpdateTagEveryInstance: on every driver, two instances on one
// database: a PATCH on one shows in its GET /tags at once and in the
// other's after its next tag-list reload, and the other's next fetch takes
// the new step; max_id did not move.
func TestUpdateTagEveryInstance(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			db := d.NewDB(t)
			instance := func() (http.Handler, *segment.Allocator) {
				st := db.Open(t)
				alloc, err := segment.New(ctx, st, segment.Config{TagRefresh: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = alloc.Close(ctx) })
				srv, err := New(Config{AdminToken: "s3cret"}, Deps{Segments: alloc, Store: st})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = srv.Close() })
				return srv.Handler(), alloc
			}
			one, _ := instance()
			other, otherAlloc := instance()
			if rec := serve(one, "POST", "/tags", `{"app_tag":"order","step":10}`, loopback, bearer); rec.Code != 201 {
				t.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			waitTag(t, other, func(r tagJSON) bool { return r.AppTag == "order" })
			if rec := serve(other, "GET", "/alloc?app_tag=order", "", loopback, ""); rec.Code != 200 {
				t.Fatalf("alloc: %d %s", rec.Code, rec.Body)
			}
			rec := serve(one, "PATCH", "/tags/order", `{"step":500,"description":"orders"}`, loopback, bearer)
			var got tagJSON
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
				t.Fatalf("PATCH: %d %s (%v), want 200", rec.Code, rec.Body, err)
			}
			if got.Step != 500 || got.Description != "orders" || got.MaxID != 10 {
				t.Errorf("PATCH answered %+v, want step 500, description orders, max_id 10 as before", got)
			}
			if r := rowOf(t, one, "order"); r.Step != 500 || r.Description != "orders" {
				t.Errorf("GET /tags on the instance patched: %+v, want step 500 and description orders at once", r)
			}
			waitTag(t, other, func(r tagJSON) bool { return r.AppTag == "order" && r.Step == 500 && r.Description == "orders" })
			// The other instance's buffer (1..10) runs out; its next fetch
			// takes at least the new step.
			if rec := serve(other, "GET", "/alloc?app_tag=order&count=15", "", loopback, ""); rec.Code != 200 {
				t.Fatalf("alloc: %d %s", rec.Code, rec.Body)
			}
			for _, s := range otherAlloc.Stats() {
				if s.AppTag == "order" && s.Step < 500 {
					t.Errorf("the other instance's fetch after the PATCH took %d IDs, want at least 500", s.Step)
				}
			}
		})
	}
}

// rowOf is tag's row in h's GET /tags.
func rowOf(tb testing.TB, h http.Handler, tag string) tagJSON {
	tb.Helper()
	for _, r := range getTags(tb, h).Tags {
		if r.AppTag == tag {
			return r
		}
	}
	tb.Fatalf("GET /tags has no %s", tag)
	return tagJSON{}
}

// waitTag waits for a row of h's GET /tags that ok accepts.
func waitTag(tb testing.TB, h http.Handler, ok func(tagJSON) bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(getTags(tb, h).Tags, ok) {
		if time.Now().After(deadline) {
			tb.Fatalf("10s on, GET /tags has %+v, without the row awaited", getTags(tb, h).Tags)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
