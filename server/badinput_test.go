package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestBadInputSameWordsAsDomain sends frontendtest's bad inputs, the ones
// every front end shares, through HTTP on the real domain and each store
// driver. For each: the domain called directly gives the case's Kind and
// message; HTTP answers with exactly that message, and with the resp_code
// and status the contract gives that Kind; and at the end the store holds
// what it held before. The RESP front end's tests run the same cases.
func TestBadInputSameWordsAsDomain(t *testing.T) {
	// The contract's answer per Kind (docs/api.md §2), written out rather than
	// read from kindTable, which is what is under test.
	wantByKind := map[string]struct{ code, status int }{
		"bad_request":  {1, 400},
		"unknown_tag":  {2, 404},
		"not_assigned": {6, 409},
		"exists":       {10, 409},
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			st := d.Open(t)
			dom := frontendtest.Open(t, st)
			srv, err := New(Config{AdminToken: "s3cret"}, Deps{
				Segments: dom.Segments, Store: st, Leases: dom.Leases,
				Snowflake: &fakeFlake{layout: dom.Layout},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			h := srv.Handler()

			for _, c := range frontendtest.Cases() {
				t.Run(c.Name, func(t *testing.T) {
					kind, msg, ok := frontendtest.Describe(c.Call(ctx, dom))
					if !ok || kind != c.WantKind || msg != c.WantMsg {
						t.Fatalf("domain answers %q %q (a domain error: %v), want %q %q", kind, msg, ok, c.WantKind, c.WantMsg)
					}
					want, known := wantByKind[c.WantKind]
					if !known {
						t.Fatalf("no HTTP answer known for kind %q", c.WantKind)
					}
					method, target, body := httpRequest(t, c)
					rec := serve(h, method, target, body, loopback, bearer)
					var env struct {
						RespCode int    `json:"resp_code"`
						Msg      string `json:"msg"`
					}
					if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
						t.Fatalf("%s %s: body %q is not JSON: %v", method, target, rec.Body, err)
					}
					if rec.Code != want.status || env.RespCode != want.code {
						t.Errorf("%s %s: HTTP %d resp_code %d, want %d %d", method, target, rec.Code, env.RespCode, want.status, want.code)
					}
					if env.Msg != c.WantMsg {
						t.Errorf("%s %s: msg %q, want the domain's %q", method, target, env.Msg, c.WantMsg)
					}
				})
			}
			frontendtest.CheckUnchanged(t, st)
		})
	}
}

// httpRequest is c in HTTP's wire format.
func httpRequest(tb testing.TB, c frontendtest.Case) (method, target, body string) {
	tb.Helper()
	obj := func(fields map[string]any) string {
		b, err := json.Marshal(fields)
		if err != nil {
			tb.Fatal(err)
		}
		return string(b)
	}
	holding := func() map[string]any {
		m := map[string]any{"worker_id": c.WorkerID, "token": c.Token}
		if c.Cluster != "" {
			m["cluster"] = c.Cluster
		}
		if c.LastTimestampMS != 0 {
			m["last_timestamp_ms"] = c.LastTimestampMS
		}
		return m
	}
	switch c.Op {
	case frontendtest.Alloc:
		target = "/alloc?app_tag=" + url.QueryEscape(c.Tag)
		if c.Count != 0 {
			target += "&count=" + strconv.Itoa(c.Count)
		}
		return http.MethodGet, target, ""
	case frontendtest.Buffered:
		return http.MethodGet, "/health?app_tag=" + url.QueryEscape(c.Tag), ""
	case frontendtest.CreateTag:
		m := map[string]any{"app_tag": c.Tag, "step": c.Step}
		if c.Start != 0 {
			m["start"] = c.Start
		}
		if c.Description != "" {
			m["description"] = c.Description
		}
		if c.Format != "" {
			m["format"] = c.Format
		}
		if c.Length != 0 {
			m["length"] = c.Length
		}
		return http.MethodPost, "/tags", obj(m)
	case frontendtest.Acquire:
		m := map[string]any{}
		if c.Cluster != "" {
			m["cluster"] = c.Cluster
		}
		return http.MethodPost, "/workerid", obj(m)
	case frontendtest.Renew:
		return http.MethodPost, "/workerid/renew", obj(holding())
	case frontendtest.Release:
		return http.MethodPost, "/workerid/release", obj(holding())
	case frontendtest.Decompose:
		return http.MethodGet, "/snowflake/" + strconv.FormatInt(c.ID, 10), ""
	}
	tb.Fatalf("no HTTP request for op %q", c.Op)
	return "", "", ""
}
