package server

import (
	"strings"
	"testing"
)

// TestAllocRanges: /alloc?as=ranges on the real allocator and store, from
// one ID to more than a segment; and every refusal (a count out of
// 1..max_range, another as, a tag whose IDs are not runs) reserves
// nothing: the next ID follows the last one issued.
func TestAllocRanges(t *testing.T) {
	rg := newRealRig(t) // test_business: step 100000, starts at 1
	for _, body := range []string{`{"app_tag":"scr","step":10,"format":"scrambled","length":8}`,
		`{"app_tag":"day","format":"dated","period":"day"}`} {
		if got := rg.do(t, "POST", "/tags", body, adminAuth...); got.status != 201 {
			t.Fatalf("create %s: %d %s", body, got.status, got.raw)
		}
	}
	const q = "/alloc?app_tag=test_business"
	for _, tc := range []struct {
		name, query string
		status      int
		want        string // the whole body, or for an error what its msg holds
		field       string
	}{
		{"one", q + "&as=ranges", 200, `{"resp_code":0,"msg":"success","ranges":[[1,1]]}`, ""},
		{"five", q + "&count=5&as=ranges", 200, `{"resp_code":0,"msg":"success","ranges":[[2,6]]}`, ""},
		{"over a segment", q + "&as=ranges&count=250000", 200, `{"resp_code":0,"msg":"success","ranges":[[7,250006]]}`, ""},
		{"count 0", q + "&count=0&as=ranges", 400, "from 1 to 1000000 (max_range)", "count"},
		{"over max_range", q + "&count=1000001&as=ranges", 400, "from 1 to 1000000 (max_range)", "count"},
		{"count spelled oddly", q + "&count=007&as=ranges", 400, "leading zeros", "count"},
		{"as twice", q + "&count=5&as=ranges&as=ranges", 400, "more than once", "as"},
		{"as another", q + "&count=5&as=list", 400, "must be ranges", "as"},
		{"scrambled", "/alloc?app_tag=scr&count=5&as=ranges", 400, "not runs of consecutive numbers", "as"},
		{"dated", "/alloc?app_tag=day&count=5&as=ranges", 400, "not runs of consecutive numbers", "as"},
		{"unknown tag", "/alloc?app_tag=nope&count=5&as=ranges", 404, "unknown app_tag", "app_tag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rg.do(t, "GET", tc.query, "")
			if got.status != tc.status {
				t.Fatalf("%s: %d %s, want %d", tc.query, got.status, got.raw, tc.status)
			}
			if tc.status == 200 {
				if got.raw != tc.want {
					t.Fatalf("%s: %s, want %s", tc.query, got.raw, tc.want)
				}
				return
			}
			if msg, _ := got.body["msg"].(string); !strings.Contains(msg, tc.want) || got.body["field"] != tc.field {
				t.Fatalf("%s: %s, want msg with %q and field %q", tc.query, got.raw, tc.want, tc.field)
			}
		})
	}
	if got := rg.do(t, "GET", q, ""); got.body["id"] != 250007.0 {
		t.Fatalf("the ID after the refusals: %s, want 250007", got.raw)
	}
	if got := rg.do(t, "GET", "/alloc?app_tag=scr&count=2", ""); got.status != 200 {
		t.Fatalf("scrambled list after the refused ranges: %s", got.raw)
	}
}
