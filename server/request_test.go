package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
)

func TestQueryParam(t *testing.T) {
	tests := []struct {
		raw       string
		want      string
		wantFound bool
		wantErr   bool
	}{
		{"", "", false, false},
		{"app_tag=order", "order", true, false},
		{"x=1&app_tag=order", "order", true, false},
		{"app_tag=a&app_tag=b", "", true, true},   // given twice
		{"app_tag=a&app_tag=a", "", true, true},   // even with one value
		{"app_tag=a&app%5Ftag=b", "", true, true}, // the same key once unescaped
		{"app_tag=a&app_tags=b&xapp_tag=c", "a", true, false},
		{"app_tag=a&x=1&x=2", "a", true, false}, // only the key read must be single
		{"app_tag", "", true, false},
		{"app_tag=", "", true, false},
		{"app_tags=x", "", false, false},
		{"xapp_tag=x", "", false, false},
		{"app_tag=a+b", "a b", true, false},
		{"app_tag=a%2Bb", "a+b", true, false},
		{"app%5ftag=order", "order", true, false},
		{"app_tag=%zz", "", true, true},
		{"&&app_tag=x&&", "x", true, false},
		{"app_tag=a=b", "a=b", true, false},
	}
	for _, tt := range tests {
		got, found, err := queryParam(tt.raw, "app_tag")
		if got != tt.want || found != tt.wantFound || (err != nil) != tt.wantErr {
			t.Errorf("queryParam(%q) = %q, %v, %v; want %q, %v, error %v", tt.raw, got, found, err, tt.want, tt.wantFound, tt.wantErr)
		}
	}
}

// FuzzQueryParam holds queryParam to url.Values.Get wherever the standard
// parser accepts the whole query and finds app_tag at most once; given
// more often, queryParam refuses it.
func FuzzQueryParam(f *testing.F) {
	for _, s := range []string{"app_tag=order", "a=1&app_tag=x%41y", "app_tag=a+b&app_tag=c", "app%5Ftag=q", "app_tag"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		vals, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		got, found, err := queryParam(raw, "app_tag")
		if n := len(vals["app_tag"]); n > 1 {
			if err == nil {
				t.Fatalf("queryParam(%q) = %q, %v, nil; want an error: app_tag is given %d times", raw, got, found, n)
			}
			return
		}
		if err != nil {
			t.Fatalf("queryParam(%q): %v, but url.ParseQuery accepts it", raw, err)
		}
		if want := vals.Get("app_tag"); got != want || found != vals.Has("app_tag") {
			t.Errorf("queryParam(%q) = %q, %v; want %q, %v", raw, got, found, want, vals.Has("app_tag"))
		}
	})
}

func TestAppendIDs(t *testing.T) {
	cases := []struct {
		ids  []int64
		strs bool
		want string
	}{
		{[]int64{7}, false, `,"id":7,"ids":[7]`},
		{[]int64{7}, true, `,"id":7,"id_str":"7","ids":[7],"ids_str":["7"]`},
		{[]int64{1, 22, 333}, true, `,"id":1,"id_str":"1","ids":[1,22,333],"ids_str":["1","22","333"]`},
	}
	for _, c := range cases {
		if got := string(appendIDs(nil, c.ids, c.strs)); got != c.want {
			t.Errorf("appendIDs(%v, %v) = %s, want %s", c.ids, c.strs, got, c.want)
		}
	}
}

func TestDuplicateKey(t *testing.T) {
	tests := []struct {
		body    string
		wantKey string // "" means none
	}{
		{`{}`, ""},
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"a":2}`, "a"},
		{`{"a":1,"b":2,"b":3,"a":4}`, "b"},
		{`{"a":1,"\u0061":2}`, "a"},                     // the same key once unescaped
		{`{"a":{"x":1,"x":2},"b":[{"y":1,"y":2}]}`, ""}, // only top-level keys decide
		{`{"a":"\"a\":1","b":2}`, ""},                   // a key's text inside a value
		{`{"A":1,"a":2}`, ""},                           // keys are case-sensitive, as readObject's fields
	}
	for _, tt := range tests {
		got, ok := duplicateKey([]byte(tt.body))
		if got != tt.wantKey || ok != (tt.wantKey != "") {
			t.Errorf("duplicateKey(%s) = %q, %v; want %q, %v", tt.body, got, ok, tt.wantKey, tt.wantKey != "")
		}
	}
}

func TestCountParam(t *testing.T) {
	limit := segment.NewCountLimit(10)
	invalid := limit.Err()
	tests := []struct {
		raw     string
		want    int
		wantErr error
	}{
		{"", 0, nil},
		{"count=1", 1, nil},
		{"count=10", 10, nil},
		{"count=%31%30", 10, nil}, // "10": every parser unescapes it so
		{"count=0", 0, invalid},
		{"count=11", 0, invalid},
		{"count=-1", 0, invalid},
		{"count=-0", 0, invalid},
		{"count=abc", 0, invalid},
		{"count=99999999999999999999", 0, invalid},
		{"count=%2B5", 0, errCountSpelling}, // "+5", which strconv.Atoi takes
		{"count=+5", 0, errCountSpelling},   // " 5": '+' is a space in a query
		{"count=%205", 0, errCountSpelling}, // " 5" spelt out
		{"count=5%20", 0, invalid},          // trailing: not a number either
		{"count=%2B%2B5", 0, errCountSpelling},
		{"count=007", 0, errCountSpelling}, // strconv.Atoi reads 7
		{"count=00", 0, errCountSpelling},
		{"count=0x10", 0, errCountSpelling}, // another base
		{"count=0b1", 0, errCountSpelling},
		{"count=1_0", 0, invalid},
	}
	for _, tt := range tests {
		got, err := countParam(tt.raw, limit)
		if got != tt.want || err != tt.wantErr {
			t.Errorf("countParam(%q) = %d, %v; want %d, %v", tt.raw, got, err, tt.want, tt.wantErr)
		}
	}
	// Given twice, whatever the values: the error names count.
	for _, raw := range []string{"count=5&count=2000", "count=5&count=5", "count=5&count=abc", "count=5&count"} {
		if _, err := countParam(raw, limit); err == nil || !strings.HasPrefix(err.Error(), "invalid count: given more than once") {
			t.Errorf("countParam(%q): got %v, want count given more than once", raw, err)
		}
	}
}
