package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
)

// notRunWords is how a Tinyid segment of a scrambled or dated tag is
// refused.
const notRunWords = "invalid bizType: this tag's IDs are not runs of consecutive numbers (a scrambled or dated tag), " +
	"so no Tinyid segment can carry them: take them from nextId or nextIdSimple"

// tinyidSegmentCases are the cases nextSegmentId and nextSegmentIdSimple
// share, with the answer in each route's form. The fake allocator's run
// is all it is asked for, max_range IDs (10 here) from 1.
func tinyidSegmentCases(route string, ok func(current, loading, max int64) string, sysErr func(string) string, ct string) []compatCase {
	maxRange10 := func(c *Config, _ *Deps) { c.MaxRange = 10 }
	return []compatCase{
		{name: "segment", target: route + "?bizType=order&token=t0k", edit: maxRange10, status: 200, ct: ct, body: ok(0, 2, 10)},
		{name: "POSTed as Tinyid's client does", method: "POST", target: route + "?token=t0k&bizType=order", edit: maxRange10,
			status: 200, ct: ct, body: ok(0, 2, 10)},
		{name: "form body", method: "POST", target: route, form: "bizType=order&token=t0k", edit: maxRange10,
			status: 200, ct: ct, body: ok(0, 2, 10)},
		{name: "default max_range", target: route + "?bizType=order", status: 200, ct: ct, body: ok(0, 200_000, 1_000_000)},
		{name: "batchSize is not read", target: route + "?bizType=order&batchSize=ten", edit: maxRange10,
			status: 200, ct: ct, body: ok(0, 2, 10)},
		{name: "unknown bizType", target: route + "?bizType=nope", status: 404, ct: ct, body: sysErr(unknownTagWords)},
		{name: "missing bizType", target: route + "?token=t0k", status: 400, ct: ct, body: sysErr("missing bizType"), untouched: true},
		{name: "bizType twice", target: route + "?bizType=order&bizType=order", status: 400, ct: ct,
			body: sysErr("invalid bizType: given more than once: send it once"), untouched: true},
		{name: "scrambled or dated", target: route + "?bizType=order", setup: func(r *rig) { r.seg.err = segment.ErrNotConsecutive },
			status: 400, ct: ct, body: sysErr(notRunWords)},
		{name: "outage", target: route + "?bizType=order", setup: func(r *rig) { r.seg.err = segment.ErrUnavailable },
			status: 503, ct: ct, body: sysErr(unavailableWords)},
		{name: "exhausted", target: route + "?bizType=order", setup: func(r *rig) { r.seg.err = segment.ErrExhausted },
			status: 409, ct: ct, body: sysErr("app_tag ID space exhausted")},
	}
}

func TestTinyidNextSegmentID(t *testing.T) {
	runCompat(t, tinyidSegmentCases("/tinyid/id/nextSegmentId",
		func(current, loading, max int64) string {
			return fmt.Sprintf(`{"data":{"maxId":%d,"loadingId":%d,"currentId":%d,"delta":1,"remainder":0},"code":200,"message":""}`,
				max, loading, current)
		},
		func(words string) string { return `{"data":null,"code":6,"message":"` + words + `"}` },
		springJSONCT))
}

func TestTinyidNextSegmentIDSimple(t *testing.T) {
	runCompat(t, tinyidSegmentCases("/tinyid/id/nextSegmentIdSimple",
		func(current, loading, max int64) string { return fmt.Sprintf("%d,%d,%d,1,0", current, loading, max) },
		func(words string) string { return words },
		springTextCT))
}

// TestTinyidSegmentsReal: on the real allocator, a Tinyid segment is what
// is left of the tag's current segment, the next one follows on, and a
// scrambled or dated tag is refused without claiming anything: the next
// ID of the tag after the segments is the one after them.
func TestTinyidSegmentsReal(t *testing.T) {
	rg := newRealRig(t) // test_business: step 100000, starts at 1
	for _, body := range []string{`{"app_tag":"scr","step":10,"format":"scrambled","length":8}`,
		`{"app_tag":"day","format":"dated","period":"day"}`} {
		if got := rg.do(t, "POST", "/tags", body, adminAuth...); got.status != 201 {
			t.Fatalf("create %s: %d %s", body, got.status, got.raw)
		}
	}
	const route = "/tinyid/id/nextSegmentIdSimple"
	h := rg.srv.Handler()
	if got := compatDo(h, "POST", route+"?token=t&bizType=test_business", ""); got.Code != 200 || got.Body.String() != "0,20000,100000,1,0" {
		t.Fatalf("first segment: %d %q, want the tag's first segment, 0,20000,100000,1,0", got.Code, got.Body)
	}
	second := compatDo(h, "POST", route+"?token=t&bizType=test_business", "").Body.String()
	f := strings.Split(second, ",")
	if len(f) != 5 || f[0] != "100000" || f[3] != "1" || f[4] != "0" {
		t.Fatalf("second segment: %q, want it from 100000 on", second)
	}
	loading, _ := strconv.ParseInt(f[1], 10, 64)
	last, _ := strconv.ParseInt(f[2], 10, 64)
	if want := 100000 + (last-100000)*20/100; last <= 100000 || loading != want {
		t.Fatalf("second segment: %q, want maxId above 100000 and loadingId %d", second, want)
	}
	for _, tag := range []string{"scr", "day"} {
		for _, r := range []string{route, "/tinyid/id/nextSegmentId"} {
			got := compatDo(h, "GET", r+"?bizType="+tag, "")
			if got.Code != 400 || !strings.Contains(got.Body.String(), notRunWords) {
				t.Errorf("%s of %s: %d %q, want 400 with %q", r, tag, got.Code, got.Body, notRunWords)
			}
		}
	}
	if got := rg.do(t, "GET", "/alloc?app_tag=test_business", ""); got.body["id"] != float64(last+1) {
		t.Errorf("the ID after the segments: %s, want %d", got.raw, last+1)
	}
	// nextId and nextIdSimple serve scrambled tags, in no order, as /alloc does.
	if got := compatDo(h, "GET", "/tinyid/id/nextIdSimple?bizType=scr&batchSize=3", ""); got.Code != 200 || len(strings.Split(got.Body.String(), ",")) != 3 {
		t.Errorf("nextIdSimple of a scrambled tag: %d %q, want 3 IDs", got.Code, got.Body)
	}
}
