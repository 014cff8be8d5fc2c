package server

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/idalloc/idalloc/store/storetest"
)

// envelopeOf decodes an answer keeping numbers as json.Number, so a test
// can tell a JSON number from a string and read 18 digits exactly.
func envelopeOf(tb testing.TB, raw []byte) map[string]any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		tb.Fatalf("body %q is not JSON: %v", raw, err)
	}
	return m
}

// jsonID reads an ID that must be a JSON number.
func jsonID(tb testing.TB, v any) int64 {
	tb.Helper()
	n, ok := v.(json.Number)
	if !ok {
		tb.Fatalf("id %#v is not a JSON number", v)
	}
	id, err := n.Int64()
	if err != nil {
		tb.Fatalf("id %s: %v", n, err)
	}
	return id
}

// TestFormatsOverHTTP creates a tag of each format with POST /tags, takes
// single IDs and batches with GET /alloc, and lists them with GET /tags,
// on each store driver with the real allocator.
func TestFormatsOverHTTP(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st := d.Open(t)
			h := realServer(t, st)
			do := func(method, target, body string) (int, map[string]any, string) {
				t.Helper()
				rec := serve(h, method, target, body, loopback, bearer)
				return rec.Code, envelopeOf(t, rec.Body.Bytes()), rec.Body.String()
			}

			for _, c := range []struct {
				body             string
				wantStart        int64
				wantFormat       string
				wantLength       int64
				digits           int // 0: not fixed
				first, second    int64
				increasing       bool
				wantFirstOfBatch int64 // 0: not predictable
			}{
				{body: `{"app_tag":"seq","step":100}`, wantStart: 1, wantFormat: "sequential", first: 1, second: 2, increasing: true, wantFirstOfBatch: 3},
				{body: `{"app_tag":"fx","step":100,"format":"fixed_length","length":6,"start":5}`, wantStart: 100000,
					wantFormat: "fixed_length", wantLength: 6, digits: 6, first: 100000, second: 100001, increasing: true, wantFirstOfBatch: 100002},
				{body: `{"app_tag":"scr","step":100,"format":"scrambled","length":10}`, wantStart: 1,
					wantFormat: "scrambled", wantLength: 10, digits: 10},
				{body: `{"app_tag":"scr18","step":100,"format":"scrambled","length":18,"start":1}`, wantStart: 1,
					wantFormat: "scrambled", wantLength: 18, digits: 18},
			} {
				code, env, raw := do("POST", "/tags", c.body)
				tag, _ := env["app_tag"].(string)
				if code != http.StatusCreated || jsonID(t, env["start"]) != c.wantStart || env["format"] != c.wantFormat ||
					jsonID(t, env["length"]) != c.wantLength {
					t.Fatalf("POST /tags %s = %d %s, want 201 with start %d, format %s, length %d",
						c.body, code, raw, c.wantStart, c.wantFormat, c.wantLength)
				}

				var ids []int64
				for range 2 {
					code, env, raw := do("GET", "/alloc?app_tag="+tag, "")
					if code != 200 {
						t.Fatalf("GET /alloc?app_tag=%s = %d %s", tag, code, raw)
					}
					ids = append(ids, jsonID(t, env["id"]))
				}
				code, env, raw = do("GET", "/alloc?app_tag="+tag+"&count=50", "")
				list, _ := env["ids"].([]any)
				if code != 200 || len(list) != 50 || jsonID(t, env["id"]) != jsonID(t, list[0]) {
					t.Fatalf("GET /alloc?app_tag=%s&count=50 = %d %s, want 50 ids, id the first", tag, code, raw)
				}
				batch := make([]int64, len(list))
				for i, v := range list {
					batch[i] = jsonID(t, v)
				}
				ids = append(ids, batch...)

				if c.first != 0 && (ids[0] != c.first || ids[1] != c.second) {
					t.Errorf("%s: first IDs %d, %d; want %d, %d", tag, ids[0], ids[1], c.first, c.second)
				}
				if c.wantFirstOfBatch != 0 && batch[0] != c.wantFirstOfBatch {
					t.Errorf("%s: batch starts at %d, want %d", tag, batch[0], c.wantFirstOfBatch)
				}
				if c.increasing && !slices.IsSorted(ids) {
					t.Errorf("%s: IDs %v not increasing", tag, ids)
				}
				for _, id := range ids {
					if c.digits != 0 && len(strconv.FormatInt(id, 10)) != c.digits {
						t.Errorf("%s: ID %d, want %d digits", tag, id, c.digits)
					}
				}
				if u := slices.Compact(slices.Sorted(slices.Values(ids))); len(u) != len(ids) {
					t.Errorf("%s: %d IDs, %d distinct", tag, len(ids), len(u))
				}
			}

			// GET /tags shows every tag's format and length, and never a key.
			code, env, raw := do("GET", "/tags", "")
			if code != 200 {
				t.Fatalf("GET /tags = %d %s", code, raw)
			}
			want := map[string]string{"seq": "sequential 0", "fx": "fixed_length 6", "scr": "scrambled 10", "scr18": "scrambled 18", "test_business": "sequential 0"}
			rows, _ := env["tags"].([]any)
			wantFields := []string{"app_tag", "current_step", "description", "format", "given_back", "left", "length", "max_id", "start", "step", "update_time", "wasted"}
			for _, r := range rows {
				row := r.(map[string]any)
				if got := fmt.Sprintf("%v %v", row["format"], row["length"]); got != want[row["app_tag"].(string)] {
					t.Errorf("GET /tags: %s is %q, want %q", row["app_tag"], got, want[row["app_tag"].(string)])
				}
				if row["start"] == nil {
					t.Errorf("GET /tags: %s has start null, want the first ID it was created with", row["app_tag"])
				}
				if fields := slices.Sorted(maps.Keys(row)); !slices.Equal(fields, wantFields) {
					t.Errorf("GET /tags: %s has fields %v, want %v", row["app_tag"], fields, wantFields)
				}
			}
			if len(rows) != len(want) {
				t.Errorf("GET /tags lists %d tags, want %d: %s", len(rows), len(want), raw)
			}
			tags, err := st.Tags(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range tags {
				if len(tg.FormatKey) == 0 {
					continue
				}
				for _, enc := range []string{hex.EncodeToString(tg.FormatKey), base64.StdEncoding.EncodeToString(tg.FormatKey),
					base64.RawURLEncoding.EncodeToString(tg.FormatKey)} {
					if bytes.Contains([]byte(raw), []byte(enc)) {
						t.Errorf("GET /tags shows the key of %s", tg.AppTag)
					}
				}
			}
		})
	}
}

// TestFixedLengthExhaustedOverHTTP: the last number of a fixed_length tag,
// then resp_code 10, for single IDs and batches.
func TestFixedLengthExhaustedOverHTTP(t *testing.T) {
	st := storetest.SQLite().Open(t)
	h := realServer(t, st)
	if rec := serve(h, "POST", "/tags", `{"app_tag":"d","step":5,"format":"fixed_length","length":2,"start":97}`, loopback, bearer); rec.Code != 201 {
		t.Fatalf("POST /tags = %d %s", rec.Code, rec.Body)
	}
	for _, c := range []struct{ target, want string }{
		{"/alloc?app_tag=d", `{"resp_code":0,"msg":"success","id":97}`},
		{"/alloc?app_tag=d&count=2", `{"resp_code":0,"msg":"success","id":98,"ids":[98,99]}`},
		{"/alloc?app_tag=d", `{"resp_code":10,"msg":"app_tag ID space exhausted","kind":"exhausted","field":"app_tag"}`},
		{"/alloc?app_tag=d&count=1", `{"resp_code":10,"msg":"app_tag ID space exhausted","kind":"exhausted","field":"app_tag"}`},
	} {
		rec := serve(h, "GET", c.target, "", loopback, "")
		if got := rec.Body.String(); got != c.want {
			t.Errorf("GET %s = %d %s, want %s", c.target, rec.Code, got, c.want)
		}
		checkEnvelope(t, c.target, rec) // resp_code 10 is HTTP 409
	}
}
