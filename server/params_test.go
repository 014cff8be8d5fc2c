package server

import (
	"strings"
	"testing"
)

// TestOneSpellingPerRequest (docs/api.md §2): a parameter given twice, or a
// number with a sign, leading zeros or another base, in any handler's query
// or path, is 400 resp_code 1 naming it, and reaches neither the allocator
// nor the snowflake source; the numbers' one spelling is served.
func TestOneSpellingPerRequest(t *testing.T) {
	tests := []struct {
		target string
		field  string // "" means served
	}{
		{"/alloc?app_tag=order&count=5&count=2000", "count"},
		{"/alloc?app_tag=order&count=5&count=5", "count"},
		{"/alloc?count=5&app_tag=order&count=2000", "count"},
		{"/alloc?app_tag=order&app_tag=test_business", "app_tag"},
		{"/alloc?app_tag=order&app%5Ftag=order", "app_tag"},
		{"/alloc?app_tag=order&count=007", "count"},
		{"/alloc?app_tag=order&count=00", "count"},
		{"/alloc?app_tag=order&count=0x10", "count"},
		{"/alloc?app_tag=order&count=%2B5", "count"},
		{"/alloc?app_tag=order&count=+5", "count"},
		{"/health?app_tag=order&app_tag=nope", "app_tag"},
		{"/snowflake?count=2&count=3", "count"},
		{"/snowflake?count=010", "count"},
		{"/snowflake?count=+2", "count"},
		{"/snowflake/000123", "id"},
		{"/snowflake/0x10", "id"},
		{"/snowflake/+123", "id"},
		{"/snowflake/%2B123", "id"},
		{"/snowflake/-0", "id"},
		{"/snowflake/-007", "id"},
		{"/alloc?app_tag=order&count=10", ""},
		{"/alloc?app_tag=order&x=1&x=2", ""}, // a parameter no handler reads may repeat
		{"/snowflake?count=10", ""},
		{"/snowflake/123", ""},
		{"/snowflake/0", ""},
		{"/health?app_tag=order", ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.do(t, "GET", tt.target, "")
			if tt.field == "" {
				if got.status != 200 || got.code() != 0.0 {
					t.Fatalf("got %d %s, want 200 resp_code 0", got.status, got.raw)
				}
				return
			}
			msg, _ := got.body["msg"].(string)
			if got.status != 400 || got.code() != 1.0 || !strings.HasPrefix(msg, "invalid "+tt.field+":") {
				t.Errorf("got %d %s, want 400 resp_code 1 naming %s", got.status, got.raw, tt.field)
			}
			if calls := append(rg.seg.list(), rg.flake.list()...); len(calls) != 0 {
				t.Errorf("refused, yet %q were called", calls)
			}
		})
	}
}
