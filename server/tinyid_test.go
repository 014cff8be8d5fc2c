package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// tinyidCases are the cases nextId and nextIdSimple share: the same
// request, and the answer in each route's form (ok and sysErr make it).
func tinyidCases(route string, ok, sysErr func(string) string, ct string) []compatCase {
	const (
		batchWords    = "invalid batchSize: must be an integer from 1 (above max_batch it is max_batch, as Tinyid's batch.size.max)"
		spellingWords = "invalid batchSize: write it in decimal digits alone, without a sign, spaces or leading zeros ('+' in a query string also reads as a space)"
	)
	maxBatch3 := func(c *Config, _ *Deps) { c.MaxBatch = 3 }
	return []compatCase{
		{name: "one", target: route + "?bizType=order&token=t0k", status: 200, ct: ct, body: ok("1")},
		{name: "batch", target: route + "?bizType=order&batchSize=3&token=t0k", status: 200, ct: ct, body: ok("1,2,3")},
		{name: "empty batchSize is 1", target: route + "?bizType=order&batchSize=", status: 200, ct: ct, body: ok("1")},
		{name: "batchSize above max_batch is max_batch", target: route + "?bizType=order&batchSize=100000", edit: maxBatch3,
			status: 200, ct: ct, body: ok("1,2,3")},
		{name: "POSTed as Tinyid's client does", method: "POST", target: route + "?token=t0k&bizType=order", status: 200, ct: ct, body: ok("1")},
		{name: "form body", method: "POST", target: route, form: "bizType=order&batchSize=2&token=t0k", status: 200, ct: ct, body: ok("1,2")},
		{name: "query and form body", method: "POST", target: route + "?bizType=order", form: "batchSize=2", status: 200, ct: ct, body: ok("1,2")},
		{name: "unknown bizType", target: route + "?bizType=nope&token=t0k", status: 404, ct: ct, body: sysErr(unknownTagWords)},
		{name: "invalid bizType", target: route + "?bizType=a%20b", status: 400, ct: ct, body: sysErr(invalidTagWords)},
		{name: "missing bizType", target: route + "?token=t0k", status: 400, ct: ct, body: sysErr("missing bizType"), untouched: true},
		{name: "bizType twice", method: "POST", target: route + "?bizType=order", form: "bizType=test_business", status: 400, ct: ct,
			body: sysErr("invalid bizType: given more than once: send it once"), untouched: true},
		{name: "batchSize 0", target: route + "?bizType=order&batchSize=0", status: 400, ct: ct, body: sysErr(batchWords), untouched: true},
		{name: "batchSize negative", target: route + "?bizType=order&batchSize=-2", status: 400, ct: ct, body: sysErr(batchWords), untouched: true},
		{name: "batchSize not a number", target: route + "?bizType=order&batchSize=ten", status: 400, ct: ct, body: sysErr(batchWords), untouched: true},
		{name: "batchSize signed", target: route + "?bizType=order&batchSize=%2B5", status: 400, ct: ct, body: sysErr(spellingWords), untouched: true},
		{name: "outage", target: route + "?bizType=order", setup: func(r *rig) { r.seg.err = segment.ErrUnavailable },
			status: 503, ct: ct, body: sysErr(unavailableWords)},
		{name: "text IDs", target: route + "?bizType=order", setup: func(r *rig) { r.seg.err = segment.ErrTextOnly },
			status: 400, ct: ct, body: sysErr(segment.ErrTextOnly.Error())},
		{name: "internal", target: route + "?bizType=order", rid: "rid-7", setup: func(r *rig) { r.seg.err = errors.New("secret: db password") },
			status: 500, ct: ct, body: sysErr("internal error (request_id rid-7)")},
	}
}

func TestTinyidNextID(t *testing.T) {
	runCompat(t, tinyidCases("/tinyid/id/nextId",
		func(ids string) string { return `{"data":[` + ids + `],"code":200,"message":""}` },
		func(words string) string { return `{"data":null,"code":6,"message":"` + words + `"}` },
		springJSONCT))
}

func TestTinyidNextIDSimple(t *testing.T) {
	runCompat(t, tinyidCases("/tinyid/id/nextIdSimple",
		func(ids string) string { return ids },
		func(words string) string { return words },
		springTextCT))
}

// TestTinyidTokenCode: Tinyid's envelope tells a refused token (code 5)
// from every other failure (6), whatever the token check answers.
func TestTinyidTokenCode(t *testing.T) {
	rg := newRig(t, nil)
	for _, c := range []struct {
		err    error
		status int
		want   string
	}{
		{errs.E(errs.Unauthorized, "token", "a token is needed", nil), 401, `{"data":null,"code":5,"message":"a token is needed"}`},
		{errs.E(errs.Forbidden, "token", "not this tag", nil), 403, `{"data":null,"code":5,"message":"not this tag"}`},
		{segment.ErrUnknownTag, 404, `{"data":null,"code":6,"message":"` + unknownTagWords + `"}`},
	} {
		rec := httptest.NewRecorder()
		rg.srv.failTinyid(rec, httptest.NewRequest(http.MethodGet, "/tinyid/id/nextId", nil), c.err)
		if rec.Code != c.status || rec.Body.String() != c.want {
			t.Errorf("%v: got %d %s, want %d %s", c.err, rec.Code, rec.Body, c.status, c.want)
		}
	}
}
