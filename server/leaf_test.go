package server

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
)

// The domain's words, which every front end sends for these errors.
const (
	unknownTagWords  = "unknown app_tag: create it first (POST /tags, or HSET over RESP)"
	unavailableWords = "unavailable: the store is unreachable or too slow; retry (IDs already buffered are still served)"
	invalidTagWords  = "invalid app_tag: must match ^[A-Za-z0-9_.:-]{1,64}$"
)

func TestLeafSegment(t *testing.T) {
	outage := func(r *rig) { r.seg.err = segment.ErrUnavailable }
	runCompat(t, []compatCase{
		{name: "success", target: "/api/segment/get/order", status: 200, ct: springTextCT, body: "1"},
		{name: "success by POST", method: "POST", target: "/api/segment/get/order", status: 200, ct: springTextCT, body: "1"},
		{name: "escaped key", target: "/api/segment/get/ord%65r", status: 200, ct: springTextCT, body: "1"},
		{name: "unknown key", target: "/api/segment/get/nope", status: 404, ct: springTextCT, body: unknownTagWords},
		{name: "invalid key", target: "/api/segment/get/a%2Fb", status: 400, ct: springTextCT, body: invalidTagWords},
		{name: "outage", target: "/api/segment/get/order", setup: outage, status: 503, ct: springTextCT, body: unavailableWords},
		{name: "internal", target: "/api/segment/get/order", rid: "rid-1", setup: func(r *rig) { r.seg.err = errors.New("secret: db password") },
			status: 500, ct: springTextCT, body: "internal error (request_id rid-1)"},
		{name: "exhausted", target: "/api/segment/get/order", setup: func(r *rig) { r.seg.err = segment.ErrExhausted },
			status: 409, ct: springTextCT, body: "app_tag ID space exhausted"},
		{name: "text IDs", target: "/api/segment/get/order", setup: func(r *rig) { r.seg.err = segment.ErrTextOnly },
			status: 400, ct: springTextCT, body: segment.ErrTextOnly.Error()},
	})
}

func TestLeafSnowflake(t *testing.T) {
	runCompat(t, []compatCase{
		{name: "success", target: "/api/snowflake/get/anything", status: 200, ct: springTextCT, body: "1099511627777"},
		{name: "key ignored, as Leaf's", target: "/api/snowflake/get/not%20a%20tag", status: 200, ct: springTextCT, body: "1099511627777"},
		{name: "lease not confirmed", target: "/api/snowflake/get/x", setup: func(r *rig) { r.flake.err = snowflake.ErrFenced },
			status: 503, ct: springTextCT, body: "worker lease not confirmed: retry"},
		{name: "clock backwards", target: "/api/snowflake/get/x", setup: func(r *rig) { r.flake.err = snowflake.ErrClockDriftTryLater },
			status: 503, ct: springTextCT, body: "clock moved backwards: retry later or on another instance"},
		{name: "disabled", target: "/api/snowflake/get/x", setup: func(r *rig) { r.srv.flake = nil },
			status: 409, ct: springTextCT, body: "snowflake mode is not enabled on this instance"},
	})
}

func TestLeafDecode(t *testing.T) {
	// Leaf's own example decodes in UTC+8: its JVM's zone.
	cst := func(r *rig) { r.srv.leafZone = time.FixedZone("CST", 8*3600) }
	// 2026-11-21T02:00:00.123Z, worker 39, sequence 3448, in the default
	// layout (epoch 2026-01-01, 10 worker bits).
	const id = "117443867959262584"
	want := `{"workerId":"39","sequenceId":"3448","timestamp":"1795226400123(2026-11-21 10:00:00.123)"}`
	var cases []compatCase
	for _, route := range []string{"/decodeSnowflakeId", "/api/snowflake/decode"} {
		cases = append(cases, []compatCase{
			{name: route + " success", target: route + "?snowflakeId=" + id, setup: cst, status: 200, ct: springJSONCT, body: want},
			{name: route + " success by form", method: "POST", target: route, form: "snowflakeId=" + id, setup: cst,
				status: 200, ct: springJSONCT, body: want},
			{name: route + " zero", target: route + "?snowflakeId=0", setup: cst, status: 200, ct: springJSONCT,
				body: `{"workerId":"0","sequenceId":"0","timestamp":"1767225600000(2026-01-01 08:00:00.000)"}`},
			{name: route + " missing", target: route, status: 400, ct: springJSONCT,
				body: `{"errorMsg":"missing snowflakeId"}`, untouched: true},
			{name: route + " not a number", target: route + "?snowflakeId=12x", status: 400, ct: springJSONCT,
				body: `{"errorMsg":"invalid snowflakeId: want a non-negative 64-bit snowflake ID"}`, untouched: true},
			{name: route + " negative", target: route + "?snowflakeId=-5", status: 400, ct: springJSONCT,
				body: `{"errorMsg":"invalid snowflakeId: want a non-negative 64-bit snowflake ID"}`, untouched: true},
			{name: route + " above 2^63", target: route + "?snowflakeId=9223372036854775808", status: 400, ct: springJSONCT,
				body: `{"errorMsg":"invalid snowflakeId: want a non-negative 64-bit snowflake ID"}`, untouched: true},
			{name: route + " leading zero", target: route + "?snowflakeId=012", status: 400, ct: springJSONCT,
				body: `{"errorMsg":"invalid snowflakeId: write it in decimal digits alone, without a sign or leading zeros"}`, untouched: true},
			{name: route + " given twice", method: "POST", target: route + "?snowflakeId=1", form: "snowflakeId=2", status: 400, ct: springJSONCT,
				body: `{"errorMsg":"invalid snowflakeId: given more than once: send it once"}`, untouched: true},
			{name: route + " disabled", target: route + "?snowflakeId=1", setup: func(r *rig) { r.srv.flake = nil },
				status: 409, ct: springJSONCT, body: `{"errorMsg":"snowflake mode is not enabled on this instance"}`},
		}...)
	}
	runCompat(t, cases)
}

// TestLeafSnowflakeDecodesAsIdalloc: an ID from Leaf's get route decodes
// on Leaf's decode route to the parts /snowflake/{id} shows.
func TestLeafSnowflakeDecodesAsIdalloc(t *testing.T) {
	rg := newRig(t, nil)
	rg.srv.leafZone = time.UTC
	l := rg.flake.layout
	id, err := l.Compose(time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC).UnixMilli(), 1023, 4095)
	if err != nil {
		t.Fatal(err)
	}
	rg.flake.next.Store(id - 1)
	got := compatDo(rg.srv.Handler(), "", "/api/snowflake/get/x", "").Body.String()
	dec := compatDo(rg.srv.Handler(), "", "/decodeSnowflakeId?snowflakeId="+got, "")
	want := `{"workerId":"1023","sequenceId":"4095","timestamp":"1795226400000(2026-11-21 02:00:00.000)"}`
	if dec.Code != http.StatusOK || dec.Body.String() != want {
		t.Errorf("decode of %s: got %d %s, want %s", got, dec.Code, dec.Body, want)
	}
	own := rg.do(t, "GET", "/snowflake/"+got, "")
	if own.body["worker_id"] != 1023.0 || own.body["sequence"] != 4095.0 || own.body["timestamp_ms"] != 1795226400000.0 {
		t.Errorf("/snowflake/%s: got %s", got, own.raw)
	}
}
