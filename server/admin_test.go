package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// adminCalls are every admin route with a body it would accept.
var adminCalls = []struct{ method, target, body string }{
	{"POST", "/tags", `{"app_tag":"new","step":10}`},
	{"PATCH", "/tags/order", `{"step":20}`},
	{"POST", "/workerid", `{"cluster":"c"}`},
	{"POST", "/workerid/renew", `{"worker_id":7,"token":"` + goodToken + `"}`},
	{"POST", "/workerid/release", `{"worker_id":7,"token":"` + goodToken + `"}`},
}

// TestAdminBrowserHeaders: an admin call that a browser marks as coming
// from another origin is refused in both modes, on every admin route, and
// reaches no dependency; a call without those headers (curl) or from the
// service's own origin is served.
func TestAdminBrowserHeaders(t *testing.T) {
	tests := []struct {
		name    string
		host    string   // "" means localhost:8880
		headers []string // name, value pairs
		refused string   // a substring of the refusal; "" means served
	}{
		{name: "neither header, as curl sends"},
		{name: "same origin", headers: []string{"Origin", "http://localhost:8880"}},
		{name: "same origin, other case", headers: []string{"Origin", "HTTP://LocalHost:8880"}},
		{name: "same origin, default port in Origin", host: "localhost", headers: []string{"Origin", "http://localhost:80"}},
		{name: "same origin, default port in Host", host: "localhost:80", headers: []string{"Origin", "http://localhost"}},
		{name: "same origin IPv6", host: "[::1]:8880", headers: []string{"Origin", "http://[::1]:8880"}},
		{name: "same origin IPv4", host: "127.0.0.1:8880", headers: []string{"Origin", "http://127.0.0.1:8880"}},
		{name: "foreign origin", headers: []string{"Origin", "http://evil.example"}, refused: "Origin"},
		{name: "foreign origin on loopback", headers: []string{"Origin", "http://127.0.0.1:8880"}, refused: "Origin"},
		{name: "other port", headers: []string{"Origin", "http://localhost:3000"}, refused: "Origin"},
		{name: "other scheme", headers: []string{"Origin", "https://localhost:8880"}, refused: "Origin"},
		{name: "null origin", headers: []string{"Origin", "null"}, refused: "Origin"},
		{name: "empty origin", headers: []string{"Origin", ""}, refused: "Origin"},
		{name: "origin with a path", headers: []string{"Origin", "http://localhost:8880/"}, refused: "Origin"},
		{name: "origin with user info", headers: []string{"Origin", "http://evil@localhost:8880"}, refused: "Origin"},
		{name: "origin suffix of host", host: "evil.localhost:8880", headers: []string{"Origin", "http://localhost:8880"}, refused: "Origin"},
		{name: "fetch same-origin", headers: []string{"Sec-Fetch-Site", "same-origin"}},
		{name: "fetch none", headers: []string{"Sec-Fetch-Site", "none"}},
		{name: "fetch same-origin with own Origin", headers: []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://localhost:8880"}},
		{name: "fetch same-site", headers: []string{"Sec-Fetch-Site", "same-site"}, refused: "Sec-Fetch-Site"},
		{name: "fetch cross-site", headers: []string{"Sec-Fetch-Site", "cross-site"}, refused: "Sec-Fetch-Site"},
		{name: "fetch unknown value", headers: []string{"Sec-Fetch-Site", "bogus"}, refused: "Sec-Fetch-Site"},
		{name: "fetch empty", headers: []string{"Sec-Fetch-Site", ""}, refused: "Sec-Fetch-Site"},
		{name: "fetch same-origin, foreign Origin", headers: []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://evil.example"}, refused: "Origin"},
		{name: "fetch cross-site, own Origin", headers: []string{"Sec-Fetch-Site", "cross-site", "Origin", "http://localhost:8880"}, refused: "Sec-Fetch-Site"},
	}
	modes := []struct {
		name  string
		token string
		peer  string
		auth  []string
	}{
		{name: "token", token: "s3cret-admin-token", peer: "192.0.2.1:1234", auth: adminAuth},
		{name: "loopback", peer: "127.0.0.1:5000"},
	}
	for _, m := range modes {
		for _, tt := range tests {
			for _, call := range adminCalls {
				t.Run(m.name+"/"+tt.name+call.target, func(t *testing.T) {
					rg := newRig(t, func(c *Config, _ *Deps) { c.AdminToken = m.token })
					host := tt.host
					if host == "" {
						host = "localhost:8880"
					}
					headers := append([]string{"X-Remote-Addr", m.peer, "Host", host}, m.auth...)
					got := rg.do(t, call.method, call.target, call.body, append(headers, tt.headers...)...)
					touched := len(rg.seg.list()) + len(rg.leases.list())
					msg, _ := got.body["msg"].(string)
					switch {
					case tt.refused == "" && (got.status >= 300 || touched == 0):
						t.Errorf("got %d %s (%d calls), want it served", got.status, got.raw, touched)
					case tt.refused != "" && (got.status != http.StatusUnauthorized || got.code() != 7.0 || !strings.Contains(msg, tt.refused)):
						t.Errorf("got %d %s, want 401 resp_code 7 naming %s", got.status, got.raw, tt.refused)
					case tt.refused != "" && touched != 0:
						t.Errorf("refused, yet %q %q were called", rg.seg.list(), rg.leases.list())
					}
				})
			}
		}
	}
}

// TestAdminLoopbackHost: without a token, an admin call from a loopback
// peer must also name a loopback Host, the defence against DNS rebinding;
// with a token, Host does not matter.
func TestAdminLoopbackHost(t *testing.T) {
	tests := []struct {
		host   string
		served bool
	}{
		{"localhost", true},
		{"localhost:8880", true},
		{"LOCALHOST:8880", true},
		{"LocalHost", true},
		{"localhost.:8880", true}, // the root's trailing dot: the same name
		{"localhost.", true},
		{"127.0.0.1", true},
		{"127.0.0.1:8880", true},
		{"127.1.2.3:1", true},
		{"127.255.255.255:65535", true},
		{"[::1]", true},
		{"[::1]:8880", true},
		{"[0:0:0:0:0:0:0:1]:8880", true},
		{"[::ffff:127.0.0.1]:8880", true},

		{"", false},
		{"evil.example", false},
		{"evil.example:8880", false},
		{"localhost.evil.example:8880", false},
		{"evil.localhost:8880", false},
		{"localhost..:8880", false},
		{"localhost:8880.evil.example", false},
		{"localhost:80:80", false},
		{"127.1:8880", false}, // shorthand: browsers never send it
		{"2130706433:8880", false},
		{"0.0.0.0:8880", false},
		{"128.0.0.1:8880", false},
		{"192.0.2.1:8880", false},
		{"[::]:8880", false},
		{"[::2]:8880", false},
		{"[127.0.0.1]:8880", false},
		{"::1", false}, // unbracketed IPv6 is no valid Host
	}
	for _, tt := range tests {
		t.Run("host "+tt.host, func(t *testing.T) {
			rg := newRig(t, func(c *Config, _ *Deps) { c.AdminToken = "" })
			for _, call := range adminCalls {
				got := rg.do(t, call.method, call.target, call.body, "X-Remote-Addr", "127.0.0.1:5000", "Host", tt.host)
				msg, _ := got.body["msg"].(string)
				if tt.served && got.status >= 300 {
					t.Errorf("%s %s: got %d %s, want it served", call.method, call.target, got.status, got.raw)
				}
				if !tt.served && (got.status != http.StatusUnauthorized || got.code() != 7.0 || !strings.Contains(msg, "Host")) {
					t.Errorf("%s %s: got %d %s, want 401 resp_code 7 naming Host", call.method, call.target, got.status, got.raw)
				}
			}
			if n := len(rg.seg.list()) + len(rg.leases.list()); !tt.served && n != 0 {
				t.Errorf("refused, yet %q %q were called", rg.seg.list(), rg.leases.list())
			}
		})
	}
	t.Run("with a token any Host", func(t *testing.T) {
		rg := newRig(t, nil)
		for _, call := range adminCalls {
			got := rg.do(t, call.method, call.target, call.body, append([]string{"Host", "idalloc.internal:8880"}, adminAuth...)...)
			if got.status >= 300 {
				t.Errorf("%s %s: got %d %s, want it served", call.method, call.target, got.status, got.raw)
			}
		}
	})
}

// TestListsAdminOnly: GET /tags, /status and /metrics, which list every
// tag, need the token when one is set, under the same browser rules as the
// POSTs; without a token they stay open, to Prometheus on another host
// too.
func TestListsAdminOnly(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		headers []string
		want    int
	}{
		{name: "token set, none sent", token: "s3cret-admin-token", want: 401},
		{name: "token set, wrong one", token: "s3cret-admin-token", headers: []string{"Authorization", "Bearer nope"}, want: 401},
		{name: "token set and sent", token: "s3cret-admin-token", headers: adminAuth, want: 200},
		{name: "token sent from another origin", token: "s3cret-admin-token", headers: append([]string{"Origin", "http://evil.example"}, adminAuth...), want: 401},
		{name: "no token, from the network", headers: []string{"X-Remote-Addr", "192.0.2.1:1234"}, want: 200},
	}
	for _, target := range []string{"/tags", "/status", "/metrics"} {
		for _, tt := range tests {
			t.Run(target+" "+tt.name, func(t *testing.T) {
				rg := newRig(t, func(c *Config, _ *Deps) { c.AdminToken = tt.token })
				got := rg.do(t, "GET", target, "", tt.headers...)
				if got.status != tt.want {
					t.Fatalf("got %d %s, want %d", got.status, got.raw, tt.want)
				}
				if tt.want != 401 {
					return
				}
				if !strings.Contains(got.raw, `"resp_code":7`) {
					t.Errorf("got %s, want resp_code 7", got.raw)
				}
				if calls := rg.seg.list(); len(calls) != 0 {
					t.Errorf("refused, yet %q were called", calls)
				}
				if strings.Contains(got.raw, "order") {
					t.Errorf("refused, yet the answer names a tag: %s", got.raw)
				}
			})
		}
	}
}

// adminServer serves on st with the real allocator and lease service,
// with token as admin_token ("" for the loopback mode).
func adminServer(tb testing.TB, st store.Store, token string) http.Handler {
	tb.Helper()
	ctx := context.Background()
	alloc, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = alloc.Close(ctx) })
	svc, err := workerlease.NewService(st, workerlease.Config{MaxWorkerID: 7})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(Config{AdminToken: token}, Deps{Segments: alloc, Store: st, Leases: svc})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s.Handler()
}

// curl sends a request as curl does for docs/api.md's `curl -X POST
// host/path -d body`: a form content type, no Origin, no Sec-Fetch-Site.
// headers, in name, value pairs, are added or replace those.
func curl(h http.Handler, method, url, body, peer string, headers ...string) (*httptest.ResponseRecorder, map[string]any) {
	r := httptest.NewRequest(method, url, strings.NewReader(body))
	r.RemoteAddr = peer
	r.Header.Set("User-Agent", "curl/8.5.0")
	r.Header.Set("Accept", "*/*")
	if body != "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" { // net/http keeps it in r.Host, not r.Header
			r.Host = headers[i+1]
			continue
		}
		r.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec, out
}

// TestAdminRefusalChangesNothing is the attack on a real store:
// from loopback, a forged Origin or Host on POST /tags and POST /workerid
// is 401 resp_code 7 and creates no row; a refused renew does not move
// the lease's last_timestamp_ms (the day-long stall), and a refused
// release leaves the lease held. The curl examples of docs/api.md §2
// still work, in both modes.
func TestAdminRefusalChangesNothing(t *testing.T) {
	const loopbackPeer = "127.0.0.1:40000"
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st := d.Open(t)
			ctx := context.Background()
			h := adminServer(t, st, "")
			leases := func() []store.LeaseTimestamp {
				t.Helper()
				l, err := st.(interface {
					LeaseTimestamps(context.Context) ([]store.LeaseTimestamp, error)
				}).LeaseTimestamps(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			forged := [][]string{
				{"Origin", "http://evil.example", "Host", "evil.example"},
				{"Origin", "http://evil.example"},
				{"Host", "evil.example"},
				{"Host", "evil.example:8880", "Origin", "http://evil.example:8880", "Sec-Fetch-Site", "same-origin"}, // DNS rebinding
				{"Sec-Fetch-Site", "cross-site"},
			}
			for _, hdr := range forged {
				for _, c := range []struct{ url, body string }{
					{"http://localhost:8880/tags", `{"app_tag":"x","step":10}`},
					{"http://localhost:8880/workerid", `{"cluster":"billing"}`},
				} {
					rec, out := curl(h, "POST", c.url, c.body, loopbackPeer, append(hdr, "Content-Type", "text/plain")...)
					if rec.Code != http.StatusUnauthorized || out["resp_code"] != 7.0 {
						t.Errorf("POST %s with %q: got %d %s, want 401 resp_code 7", c.url, hdr, rec.Code, rec.Body)
					}
				}
			}
			tags, err := st.Tags(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(tags) != 1 || tags[0].AppTag != "test_business" {
				t.Fatalf("after refused calls the segments table holds %+v, want only test_business", tags)
			}
			if l := leases(); len(l) != 0 {
				t.Fatalf("after refused calls worker_leases holds %+v, want no rows", l)
			}

			// docs/api.md §2: "curl -X POST localhost:8880/tags -d '{...}'" and
			// the /workerid lines.
			rec, _ := curl(h, "POST", "http://localhost:8880/tags", `{"app_tag":"order","step":1000,"start":1000000}`, loopbackPeer)
			if rec.Code != http.StatusCreated {
				t.Fatalf("README POST /tags: got %d %s, want 201", rec.Code, rec.Body)
			}
			rec, out := curl(h, "POST", "http://localhost:8880/workerid", `{"cluster":"billing"}`, loopbackPeer)
			if rec.Code != http.StatusCreated {
				t.Fatalf("README POST /workerid: got %d %s, want 201", rec.Code, rec.Body)
			}
			held := fmt.Sprintf(`{"cluster":"billing","worker_id":%v,"token":%q`, out["worker_id"], out["token"])
			before := leases()

			// A day-ahead renew and a release, both forged, change nothing.
			ahead := time.Now().Add(23 * time.Hour).UnixMilli()
			for _, target := range []string{"renew", "release"} {
				body := fmt.Sprintf(`%s,"last_timestamp_ms":%d}`, held, ahead)
				rec, _ := curl(h, "POST", "http://evil.example:8880/workerid/"+target, body, loopbackPeer, "Origin", "http://evil.example:8880")
				if rec.Code != http.StatusUnauthorized {
					t.Errorf("forged %s: got %d %s, want 401", target, rec.Code, rec.Body)
				}
			}
			if after := leases(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("after a refused renew worker_leases holds %+v, want %+v", after, before)
			}
			for _, target := range []string{"renew", "release"} { // still held: both succeed
				rec, _ := curl(h, "POST", "http://127.0.0.1:8880/workerid/"+target, held+"}", loopbackPeer)
				if rec.Code != http.StatusOK {
					t.Errorf("README POST /workerid/%s: got %d %s, want 200", target, rec.Code, rec.Body)
				}
			}
			if rec, _ := curl(h, "GET", "http://localhost:8880/tags", "", loopbackPeer); rec.Code != http.StatusOK {
				t.Errorf("README GET /tags: got %d %s, want 200", rec.Code, rec.Body)
			}

			// docs/api.md §2: curl -X POST -H 'Authorization: Bearer s3cret' …/tags,
			// sent here from another host, as a token allows.
			ht := adminServer(t, st, "s3cret")
			rec, _ = curl(ht, "POST", "http://idalloc:8880/tags", `{"app_tag":"user","step":1000}`, "192.0.2.10:5555", "Authorization", "Bearer s3cret")
			if rec.Code != http.StatusCreated {
				t.Errorf("README POST /tags with a token: got %d %s, want 201", rec.Code, rec.Body)
			}
		})
	}
}
