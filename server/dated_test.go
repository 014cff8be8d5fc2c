package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// AppendNextText answers as Next, in decimal: the fake has no dated tags.
func (f *fakeSegments) AppendNextText(ctx context.Context, tag string, dst []byte) ([]byte, error) {
	id, err := f.Next(ctx, tag)
	if err != nil {
		return dst, err
	}
	return strconv.AppendInt(dst, id, 10), nil
}

// NextTextN is never asked: only a dated tag's NextN sends the server to it.
func (f *fakeSegments) NextTextN(ctx context.Context, tag string, buf []int64) (segment.TextBatch, error) {
	f.record("NextTextN " + tag)
	return segment.TextBatch{}, segment.ErrUnknownTag
}

// DatedFormat: the fake has no dated tags.
func (f *fakeSegments) DatedFormat(string) *dated.Format { return nil }

func (f *fakeSegments) Now() time.Time { return time.Now() }

// datedRig is a server as main wires it on a real store, its allocator on
// the clock now (nil: the real one) and bounded by skew against the
// store's clock, with the admin token "s3cret".
type datedRig struct {
	h http.Handler
	// unchecked is h without the check of every answer against
	// docs/openapi.yaml (openapi_test.go), whose copies allocate.
	unchecked http.Handler
	alloc     *segment.Allocator
	reg       *prometheus.Registry
}

func newDatedRig(tb testing.TB, st store.Store, now func() time.Time, skew time.Duration) *datedRig {
	tb.Helper()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	obs := mustObserver(tb, reg)
	alloc, err := segment.New(ctx, st, segment.Config{Now: now, MaxClockSkew: skew, Observer: obs, TagRefresh: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = alloc.Close(ctx) })
	deps := Deps{Segments: alloc, Store: st}
	watch(tb, obs, deps, metrics.Sources{})
	s, err := New(Config{AdminToken: "s3cret", Observer: obs, Metrics: mustMetrics(tb, reg), Gatherer: reg, HealthInterval: time.Hour}, deps)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return &datedRig{h: s.Handler(), unchecked: s.routes(), alloc: alloc, reg: reg}
}

// centuries bounds the skew of an allocator on a test clock set to a
// fixed date against a store on the real one: no skew refusal.
const centuries = 100 * 365 * 24 * time.Hour

// exhaustedBody is the answer of a spent period: resp_code 10 as docs/api.md
// §11 says, which §2's table answers 409.
var exhaustedBody = `{"resp_code":10,"msg":"` + dated.ErrPeriodExhausted.Error() + `","kind":"period_exhausted","field":"app_tag"}`

// TestDatedOverHTTP creates dated tags with POST /tags and takes their IDs
// with GET /alloc, single and batches, on each store driver with the real
// allocator on a test clock: numbers with their text, text alone, a spent
// period (409, resp_code 10, Retry-After to the next period), a period
// boundary in Asia/Shanghai at 16:00 UTC, and the other formats' answers
// as they were.
func TestDatedOverHTTP(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			clock := testclock.New(time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC))
			rg := newDatedRig(t, d.Open(t), clock.Now, centuries)
			ok := `{"resp_code":0,"msg":"success",`
			created := `{"resp_code":0,"msg":"success","app_tag":`
			steps := []struct {
				at                   time.Time // zero: the clock as it is
				method, target, body string
				status               int
				want, retryAfter     string
			}{
				{method: "POST", target: "/tags", body: `{"app_tag":"num","format":"dated"}`, status: 201,
					want: created + `"num","step":1000,"start":1,"description":"","format":"dated","length":6,"period":"day","time_zone":"UTC","prefix":"","separator":""}`},
				{method: "POST", target: "/tags", body: `{"app_tag":"ord","format":"dated","time_zone":"Asia/Shanghai","prefix":"ORD","separator":"-","step":10}`,
					status: 201, want: created + `"ord","step":10,"start":1,"description":"","format":"dated","length":6,"period":"day","time_zone":"Asia/Shanghai","prefix":"ORD","separator":"-"}`},
				{method: "POST", target: "/tags", body: `{"app_tag":"inv","format":"dated","period":"month","length":4,"start":100,"separator":"/","step":5,"description":"invoices"}`,
					status: 201, want: created + `"inv","step":5,"start":100,"description":"invoices","format":"dated","length":4,"period":"month","time_zone":"UTC","prefix":"","separator":"/"}`},
				{method: "POST", target: "/tags", body: `{"app_tag":"one","format":"dated","length":1,"start":9,"step":1}`, status: 201,
					want: created + `"one","step":1,"start":9,"description":"","format":"dated","length":1,"period":"day","time_zone":"UTC","prefix":"","separator":""}`},
				{method: "POST", target: "/tags", body: `{"app_tag":"seq","step":10}`, status: 201,
					want: created + `"seq","step":10,"start":1,"description":"","format":"sequential","length":0}`},

				{target: "/alloc?app_tag=num", status: 200, want: ok + `"id":20261126000001,"id_str":"20261126000001","period_ends_in_ms":32400000}`},
				{target: "/alloc?app_tag=num&count=2", status: 200,
					want: ok + `"id":20261126000002,"id_str":"20261126000002","ids":[20261126000002,20261126000003],"ids_str":["20261126000002","20261126000003"],"period_ends_in_ms":32400000}`},
				// 23:00 on the 26th in Shanghai.
				{target: "/alloc?app_tag=ord", status: 200, want: ok + `"id_str":"ORD-20261126-000001","period_ends_in_ms":3600000}`},
				{target: "/alloc?app_tag=ord&count=2", status: 200, want: ok + `"id_str":"ORD-20261126-000002","period_ends_in_ms":3600000,"ids_str":["ORD-20261126-000002","ORD-20261126-000003"]}`},
				{target: "/alloc?app_tag=inv", status: 200, want: ok + `"id_str":"202611/0100","period_ends_in_ms":378000000}`},
				{target: "/alloc?app_tag=one", status: 200, want: ok + `"id":202611269,"id_str":"202611269","period_ends_in_ms":32400000}`},
				// Spent until midnight UTC, 9 hours away.
				{target: "/alloc?app_tag=one", status: 409, want: exhaustedBody, retryAfter: "32400"},
				{target: "/alloc?app_tag=one&count=1", status: 409, want: exhaustedBody, retryAfter: "32400"},
				// The other formats' answers, byte for byte as before.
				{target: "/alloc?app_tag=seq", status: 200, want: ok + `"id":1}`},
				{target: "/alloc?app_tag=seq&count=2", status: 200, want: ok + `"id":2,"ids":[2,3]}`},
				{target: "/alloc?app_tag=test_business", status: 200, want: ok + `"id":1}`},

				// Midnight in Shanghai: ord's next day; UTC's tags keep theirs.
				{at: time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC), target: "/alloc?app_tag=ord", status: 200, want: ok + `"id_str":"ORD-20261127-000001","period_ends_in_ms":86400000}`},
				{target: "/alloc?app_tag=num", status: 200, want: ok + `"id":20261126000004,"id_str":"20261126000004","period_ends_in_ms":28800000}`},
				{at: time.Date(2026, 11, 26, 23, 59, 30, 0, time.UTC), target: "/alloc?app_tag=one", status: 409, want: exhaustedBody, retryAfter: "30"},
				{at: time.Date(2026, 11, 27, 0, 0, 1, 0, time.UTC), target: "/alloc?app_tag=one", status: 200, want: ok + `"id":202611279,"id_str":"202611279","period_ends_in_ms":86399000}`},
				{target: "/alloc?app_tag=num", status: 200, want: ok + `"id":20261127000001,"id_str":"20261127000001","period_ends_in_ms":86399000}`},
				{target: "/alloc?app_tag=inv&count=2", status: 200, want: ok + `"id_str":"202611/0101","period_ends_in_ms":345599000,"ids_str":["202611/0101","202611/0102"]}`},
			}
			for _, s := range steps {
				if !s.at.IsZero() {
					clock.Set(s.at)
				}
				rec := serve(rg.h, cmpOr(s.method, "GET"), s.target, s.body, loopback, bearer)
				if rec.Code != s.status || rec.Body.String() != s.want {
					t.Errorf("%s %s %s = %d %s\nwant %d %s", cmpOr(s.method, "GET"), s.target, s.body, rec.Code, rec.Body, s.status, s.want)
				}
				if got := rec.Header().Get("Retry-After"); got != s.retryAfter {
					t.Errorf("%s: Retry-After %q, want %q", s.target, got, s.retryAfter)
				}
				checkEnvelope(t, s.target, rec)
			}
		})
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestDatedBadInput: a dated tag's settings the domain refuses, or that
// are not of their JSON type, are resp_code 1 naming the field, on each
// driver, and nothing is stored.
func TestDatedBadInput(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st := d.Open(t)
			rg := newDatedRig(t, st, nil, 0)
			for _, c := range []struct{ body, field string }{
				{`{"app_tag":"d","format":"dated","period":"week"}`, "period"},
				{`{"app_tag":"d","format":"dated","period":"Day"}`, "period"},
				{`{"app_tag":"d","format":"dated","period":5}`, "period"},
				{`{"app_tag":"d","format":"dated","time_zone":"Mars/Olympus_Mons"}`, "time_zone"},
				{`{"app_tag":"d","format":"dated","time_zone":"Local"}`, "time_zone"},
				{`{"app_tag":"d","format":"dated","time_zone":"../../etc/passwd"}`, "time_zone"},
				{`{"app_tag":"d","format":"dated","prefix":"OR D"}`, "prefix"},
				{`{"app_tag":"d","format":"dated","prefix":"ABCDEFGHIJKLM"}`, "prefix"},
				{`{"app_tag":"d","format":"dated","prefix":["ORD"]}`, "prefix"},
				{`{"app_tag":"d","format":"dated","separator":"#"}`, "separator"},
				{`{"app_tag":"d","format":"dated","separator":"--"}`, "separator"},
				{`{"app_tag":"d","format":"dated","separator":true}`, "separator"},
				{`{"app_tag":"d","format":"dated","length":11}`, "length"},
				{`{"app_tag":"d","format":"dated","period":"minute","length":7}`, "length"},
				{`{"app_tag":"d","format":"dated","length":-1}`, "length"},
				{`{"app_tag":"d","format":"dated","start":0}`, "start"},
				{`{"app_tag":"d","format":"dated","length":2,"start":100}`, "start"},
				{`{"app_tag":"d","format":"dated","step":-1}`, "step"},
				{`{"app_tag":"d","format":"scrambled","length":10,"step":10,"period":"day"}`, "period"},
				{`{"app_tag":"d","step":10,"prefix":"ORD"}`, "prefix"},
				{`{"app_tag":"d","step":10,"format":"fixed_length","length":6,"time_zone":"UTC"}`, "time_zone"},
				{`{"app_tag":"d","period":"day"}`, "step"}, // not dated: step is required
			} {
				rec := serve(rg.h, "POST", "/tags", c.body, loopback, bearer)
				var env struct {
					RespCode int    `json:"resp_code"`
					Kind     string `json:"kind"`
					Field    string `json:"field"`
					Msg      string `json:"msg"`
				}
				_ = json.Unmarshal(rec.Body.Bytes(), &env)
				if rec.Code != 400 || env.RespCode != 1 || env.Kind != "bad_request" || env.Field != c.field ||
					!strings.Contains(env.Msg, c.field) {
					t.Errorf("POST /tags %s = %d %s, want 400, resp_code 1, kind bad_request, naming %s", c.body, rec.Code, rec.Body, c.field)
				}
			}
			tags, err := st.Tags(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(tags, func(tg segment.Tag) bool { return tg.AppTag == "d" }); i >= 0 {
				t.Errorf("a refused tag was stored: %+v", tags[i])
			}
		})
	}
}
