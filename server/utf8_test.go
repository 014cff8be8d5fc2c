package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestJSONText pins which JSON strings hold text as sent: encoding/json
// decodes each of the others to U+FFFD without an error.
func TestJSONText(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{`""`, true},
		{`"orders"`, true},
		{`"numéros 📦"`, true},
		{`"\ud83d\udce6"`, true},             // 📦 as a surrogate pair
		{`"\ufffd sent as such"`, true},      // a replacement character the client meant
		{`"\\ud800"`, true},                  // a backslash, then the letters ud800
		{`"\u00e9\n\"\\\/\b\f\r\t"`, true},   // every other escape (control characters are the domain's)
		{`"\u0000"`, true},                   // a NUL decodes as a NUL: the domain refuses it
		{"\"ok\xc3\"", false},                // cut inside a character
		{"\"caf\xe9\"", false},               // Latin-1
		{"\"\xed\xa0\x80\"", false},          // UTF-8 of a surrogate
		{`"\ud800"`, false},                  // high surrogate alone, at the end
		{`"\ud800x"`, false},                 // high surrogate, then a letter
		{`"\ud800\u0041"`, false},            // high surrogate, then an escape of a letter
		{`"\udc00"`, false},                  // low surrogate alone
		{`"\udce6\ud83d"`, false},            // a pair in the wrong order
		{`"\ud83d\ud83d\udce6"`, false},      // two highs, then a low
		{`"ok \\\ud800"`, false},             // an escaped backslash, then a lone surrogate
		{`"\uD83D\uDCE6 in capitals"`, true}, // hex digits in either case
	}
	for _, tt := range tests {
		var s string
		if err := json.Unmarshal([]byte(tt.raw), &s); err != nil {
			t.Fatalf("%q is not a JSON string: %v", tt.raw, err)
		}
		if got := jsonText([]byte(tt.raw)); got != tt.want {
			t.Errorf("jsonText(%q) = %v, want %v (encoding/json decodes it to %q)", tt.raw, got, tt.want, s)
		}
	}
}

// TestCreateTagDescriptionNotText sends POST /tags with descriptions that
// are not text, on the real domain and each store driver: each is
// refused as bad input naming the description, in the domain's words
// (RESP's HSET sends the same), and the store holds nothing new. On
// MySQL this is the case of issue 19: the bytes reached the store, which
// refused them (error 1366), and that refusal was answered 503
// unavailable, which clients retry for ever. Descriptions that are text,
// escaped or not, are stored as sent.
func TestCreateTagDescriptionNotText(t *testing.T) {
	refused := []struct {
		name, desc string // desc is the JSON string, quotes included
	}{
		{"cut inside a character", "\"ok\xc3\""},
		{"Latin-1", "\"caf\xe9\""},
		{"lone surrogate escape", `"ok \ud800"`},
		{"surrogates in the wrong order", `"\udce6\ud83d"`},
		{"NUL", `"ok\u0000"`},
		{"line break", `"ok\nlevel=ERROR"`},
		{"tab", `"a\tb"`},
		{"DEL", "\"ok\x7f\""},
		{"C1 control", `"ok\u0085"`},
	}
	stored := []struct {
		name, desc, want string
	}{
		{"accents and emoji", `"numéros 📦"`, "numéros 📦"},
		{"emoji as a surrogate pair", `"\ud83d\udce6"`, "📦"},
		{"replacement character sent as such", `"\ufffd"`, "\ufffd"},
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st := d.Open(t)
			dom := frontendtest.Open(t, st)
			srv, err := New(Config{AdminToken: "s3cret"}, Deps{Segments: dom.Segments, Store: st})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			h := srv.Handler()

			for _, c := range refused {
				body := `{"app_tag":"t","step":10,"description":` + c.desc + `}`
				rec := serve(h, "POST", "/tags", body, loopback, bearer)
				var env struct {
					RespCode int    `json:"resp_code"`
					Msg      string `json:"msg"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
					t.Fatalf("%s: body %q is not JSON: %v", c.name, rec.Body, err)
				}
				if rec.Code != 400 || env.RespCode != 1 || env.Msg != segment.ErrDescriptionNotText.Error() {
					t.Errorf("%s: HTTP %d resp_code %d %q, want 400 1 %q",
						c.name, rec.Code, env.RespCode, env.Msg, segment.ErrDescriptionNotText.Error())
				}
				if rec := serve(h, "GET", "/alloc?app_tag=t", "", loopback, ""); rec.Code != 404 {
					t.Errorf("%s: GET /alloc of the refused tag: HTTP %d %s, want 404", c.name, rec.Code, rec.Body)
				}
			}
			frontendtest.CheckUnchanged(t, st)

			for i, c := range stored {
				tag := "t" + string(rune('a'+i))
				body := `{"app_tag":"` + tag + `","step":10,"description":` + c.desc + `}`
				if rec := serve(h, "POST", "/tags", body, loopback, bearer); rec.Code != 201 {
					t.Fatalf("%s: HTTP %d %s, want 201", c.name, rec.Code, rec.Body)
				}
				if got := storedDescription(t, st, tag); got != c.want {
					t.Errorf("%s: stored description %q, want %q", c.name, got, c.want)
				}
			}
		})
	}
}

// storedDescription reads tag's description back from st.
func storedDescription(tb testing.TB, st segment.Store, tag string) string {
	tb.Helper()
	tags, err := st.Tags(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range tags {
		if t.AppTag == tag {
			return t.Description
		}
	}
	tb.Fatalf("no tag %s in the store", tag)
	return ""
}
