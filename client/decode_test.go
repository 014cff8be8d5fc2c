package client

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

func TestAppendIDs(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []int64
		wantErr    bool
	}{
		{"alloc single", `{"resp_code":0,"msg":"success","id":7}`, []int64{7}, false},
		{"alloc batch", `{"resp_code":0,"msg":"success","id":1,"ids":[1,2,3]}`, []int64{1, 2, 3}, false},
		{"scrambled order kept", `{"resp_code":0,"msg":"success","id":907,"ids":[907,113,555]}`, []int64{907, 113, 555}, false},
		{"snowflake batch",
			`{"resp_code":0,"msg":"success","id":118477193813688323,"id_str":"118477193813688323","ids":[118477193813688323,118477193813688324],"ids_str":["118477193813688323","118477193813688324"]}`,
			[]int64{118477193813688323, 118477193813688324}, false},
		{"max int64", `{"resp_code":0,"msg":"success","ids":[9223372036854775807]}`, []int64{9223372036854775807}, false},
		{"trailing newline", "{\"resp_code\":0,\"msg\":\"success\",\"id\":1,\"ids\":[1,2]}\n", []int64{1, 2}, false},
		// Not the server's own form: encoding/json reads them.
		{"re-encoded by a proxy", `{ "msg": "success", "resp_code": 0, "ids": [ 4, 5 ] }`, []int64{4, 5}, false},
		{"extra field", `{"resp_code":0,"msg":"success","id":1,"ids":[1,2],"left":5}`, []int64{1, 2}, false},
		{"escaped key", `{"resp_code":0,"msg":"success","i\u0064s":[8,9]}`, []int64{8, 9}, false},
		// Malformed: never a made-up ID.
		{"missing separator", `{"resp_code":0,"msg":"success","ids":[1-2]}`, nil, true},
		{"trailing comma", `{"resp_code":0,"msg":"success","ids":[1,2,]}`, nil, true},
		{"overflow", `{"resp_code":0,"msg":"success","ids":[9223372036854775808]}`, nil, true},
		{"fraction", `{"resp_code":0,"msg":"success","ids":[1.5]}`, nil, true},
		{"truncated", `{"resp_code":0,"msg":"success","ids":[1,2`, nil, true},
		{"no ids", `{"resp_code":0,"msg":"success"}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := appendIDs([]int64{-1}, []byte(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %v", err, tc.want)
			}
			if want := append([]int64{-1}, tc.want...); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestDecodeDated: the answers of docs/api.md §11 (numeric dated: id, id_str,
// ids, ids_str; text: id_str and ids_str only), with and without
// period_ends_in_ms, in the server's form and re-encoded; what marks a
// dated tag's answer; and malformed ones refused.
func TestDecodeDated(t *testing.T) {
	const ok = `{"resp_code":0,"msg":"success"`
	for _, tc := range []struct {
		name, body string
		ids        []int64
		strs       []string
		dated      bool
		endsIn     time.Duration
		wantErr    bool
	}{
		{"sequential", ok + `,"id":1,"ids":[1,2]}`, []int64{1, 2}, nil, false, -1, false},
		{"numeric dated", ok + `,"id":20261126000001,"id_str":"20261126000001","ids":[20261126000001,20261126000002],"ids_str":["20261126000001","20261126000002"]}`,
			[]int64{20261126000001, 20261126000002}, nil, true, -1, false},
		{"numeric dated, one", ok + `,"id":20261126000001,"id_str":"20261126000001"}`, []int64{20261126000001}, nil, true, -1, false},
		{"text", ok + `,"id_str":"ORD-20261126-000001","ids_str":["ORD-20261126-000001","ORD-20261126-000002"]}`,
			nil, []string{"ORD-20261126-000001", "ORD-20261126-000002"}, true, -1, false},
		{"text, one", ok + `,"id_str":"ORD/20261126/000007"}`, nil, []string{"ORD/20261126/000007"}, true, -1, false},
		{"text with period_ends_in_ms", ok + `,"id_str":"A1","ids_str":["A1","A2"],"period_ends_in_ms":1500}`,
			nil, []string{"A1", "A2"}, true, 1500 * time.Millisecond, false},
		{"numeric with period_ends_in_ms", ok + `,"id":11,"ids":[11],"period_ends_in_ms":0}`, []int64{11}, nil, true, 0, false},
		{"a negative period_ends_in_ms is 0", ok + `,"id_str":"A1","ids_str":["A1"],"period_ends_in_ms":-5}`, nil, []string{"A1"}, true, 0, false},
		// Not the server's own form: encoding/json reads them.
		{"re-encoded text", `{ "resp_code": 0, "msg": "success", "ids_str": [ "ORD\/1", "ORD\/2" ], "period_ends_in_ms": 20 }`,
			nil, []string{"ORD/1", "ORD/2"}, true, 20 * time.Millisecond, false},
		{"empty ids_str", ok + `,"id_str":"A1","ids_str":[]}`, nil, []string{"A1"}, true, -1, false},
		{"no IDs at all", ok + `,"period_ends_in_ms":5}`, nil, nil, false, 0, true},
		{"unterminated string", ok + `,"ids_str":["A1]}`, nil, nil, false, 0, true},
		{"text array trailing comma", ok + `,"ids_str":["A1",]}`, nil, nil, false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decode(nil, []byte(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", d)
				}
				return
			}
			if err != nil || !slices.Equal(d.ids, tc.ids) || !slices.Equal(d.strs, tc.strs) || d.dated != tc.dated || d.endsIn != tc.endsIn {
				t.Errorf("got %+v, %v; want ids %v strs %q dated %v endsIn %v", d, err, tc.ids, tc.strs, tc.dated, tc.endsIn)
			}
			if (d.strs == nil) != (tc.strs == nil) {
				t.Errorf("strs %#v, want %#v: nil means numeric IDs", d.strs, tc.strs)
			}
		})
	}
	if _, err := appendIDs(nil, []byte(ok+`,"id_str":"A1","ids_str":["A1"]}`)); !errors.Is(err, errNoIDs) {
		t.Errorf("appendIDs of text IDs: %v, want errNoIDs", err)
	}
}

// TestScanMatchesServerFormat: the scanner reads the server's own bodies;
// the fallback is for others only.
func TestScanMatchesServerFormat(t *testing.T) {
	body := []byte(`{"resp_code":0,"msg":"success","id":10,"ids":[10,11,12]}`)
	if got, ok := scan(nil, body); !ok || !slices.Equal(got.ids, []int64{10, 11, 12}) || got.dated {
		t.Errorf("scan: got %+v %v, want [10 11 12], not dated, true", got, ok)
	}
	text := []byte(`{"resp_code":0,"msg":"success","id_str":"O-1","ids_str":["O-1","O-2"],"period_ends_in_ms":7}`)
	if got, ok := scan(nil, text); !ok || !slices.Equal(got.strs, []string{"O-1", "O-2"}) || !got.dated || got.endsIn != 7*time.Millisecond {
		t.Errorf("scan of text IDs: got %+v %v, want [O-1 O-2], dated, 7ms, true", got, ok)
	}
}

// TestRespCodeErrors: each answer maps to its sentinel by resp_code,
// narrowed by kind and field, never by the words (a newer server may say
// them otherwise).
func TestRespCodeErrors(t *testing.T) {
	for _, tc := range []struct {
		code        int
		kind, field string
		want        error
	}{
		{1, "bad_request", "count", ErrBadRequest},
		{1, "bad_request", "token", ErrInvalidToken},
		{1, "bad_request", "worker_id", ErrInvalidWorkerID},
		{1, "bad_request", "app_tag", ErrInvalidTag},
		{2, "unknown_tag", "app_tag", ErrUnknownTag},
		{3, "draining", "", ErrUnavailable},
		{4, "clock_backwards", "", ErrUnavailable},
		{5, "no_worker_id", "", ErrNoAvailableID},
		{6, "token_mismatch", "token", ErrTokenMismatch},
		{6, "lease_expired", "token", ErrTokenExpired},
		{6, "not_assigned", "worker_id", ErrNotAssigned},
		{6, "a_kind_of_a_newer_server", "", ErrTokenMismatch},
		{7, "unauthorized", "", ErrUnauthorized},
		{8, "internal", "", ErrInternal},
		{9, "method_not_allowed", "", ErrBadRequest},
		{10, "exhausted", "app_tag", ErrExhausted},
		{42, "", "", ErrInternal},
	} {
		err := error(newError("http://x", 400, answerError{code: tc.code, msg: "words", kind: tc.kind, field: tc.field}))
		if !errors.Is(err, tc.want) {
			t.Errorf("resp_code %d %s %s: got %v, want errors.Is %v", tc.code, tc.kind, tc.field, err, tc.want)
		}
	}
	// The client's names are the domain's values: either name matches.
	if !errors.Is(newError("u", 409, answerError{code: 6, kind: "lease_expired", field: "token"}), workerlease.ErrLeaseExpired) {
		t.Error("ErrTokenExpired is not workerlease.ErrLeaseExpired")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", defaultAside},
		{"2", 2 * time.Second},
		{"0", 100 * time.Millisecond},
		{"86400", maxAside},
		{now.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second},
		{"soon", defaultAside},
	} {
		if got := retryAfter(tc.v, now); got != tc.want {
			t.Errorf("retryAfter(%q): got %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{URLs: []string{"localhost:8880"}},
		{URLs: []string{"ftp://h"}},
		{URLs: []string{"http://"}},
		{URLs: []string{"http://h/?q=1"}},
		{URLs: []string{"http://h"}, MaxBatch: -1},
		{URLs: []string{"http://h"}, MaxBatch: MaxMaxBatch + 1},
		{URLs: []string{"http://h"}, MaxRange: -1},
		{URLs: []string{"http://h"}, MaxRange: MaxMaxRange + 1},
		{URLs: []string{"http://h"}, SnowflakeMaxAge: -time.Second},
		{URLs: []string{"http://h"}, DatedMaxAge: -time.Second},
		{URLs: []string{"http://h"}, RequestTimeout: -time.Second},
	} {
		if c, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(%+v): got %v, want ErrInvalidConfig", cfg, err)
		}
	}
	c, err := New(Config{URLs: []string{"http://127.0.0.1:8880/", "https://lb.example/idalloc"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := fmt.Sprint(c.insts[0].base, " ", c.insts[1].base); got != "http://127.0.0.1:8880 https://lb.example/idalloc" {
		t.Errorf("base URLs: got %s", got)
	}
}

// TestDecodeRanges: answers of as=ranges in the server's form and
// re-encoded; bodies the server never sends are refused, never read as
// made-up IDs.
func TestDecodeRanges(t *testing.T) {
	const ok = `{"resp_code":0,"msg":"success"`
	for _, tc := range []struct {
		name, body string
		want       []span
		wantErr    bool
	}{
		{"one range", ok + `,"ranges":[[8,1000007]]}`, []span{{8, 1000007}}, false},
		{"two ranges", ok + `,"ranges":[[1,5],[101,200]]}`, []span{{1, 5}, {101, 200}}, false},
		{"one ID", ok + `,"ranges":[[7,7]]}`, []span{{7, 7}}, false},
		{"from 0", ok + `,"ranges":[[0,3]]}`, []span{{0, 3}}, false},
		{"up to max int64", ok + `,"ranges":[[9223372036854775800,9223372036854775807]]}`, []span{{9223372036854775800, 9223372036854775807}}, false},
		{"re-encoded by a proxy", `{ "resp_code": 0, "msg": "success", "ranges": [ [1, 5], [7, 9] ] }`, []span{{1, 5}, {7, 9}}, false},
		{"extra field", ok + `,"ranges":[[1,2]],"left":5}`, []span{{1, 2}}, false},
		// Refused.
		{"no ranges", ok + `,"ranges":[]}`, nil, true},
		{"last below first", ok + `,"ranges":[[5,4]]}`, nil, true},
		{"overlapping", ok + `,"ranges":[[1,5],[5,9]]}`, nil, true},
		{"decreasing", ok + `,"ranges":[[6,9],[1,5]]}`, nil, true},
		{"decreasing, re-encoded", `{ "resp_code": 0, "msg": "success", "ranges": [ [6, 9], [1, 5] ] }`, nil, true},
		{"negative", ok + `,"ranges":[[-1,5]]}`, nil, true},
		{"more than int64 counts", ok + `,"ranges":[[0,9223372036854775807]]}`, nil, true},
		{"three numbers", ok + `,"ranges":[[1,2,3]]}`, nil, true},
		{"three numbers, re-encoded", `{ "resp_code": 0, "msg": "success", "ranges": [ [1, 2, 3] ] }`, nil, true},
		{"one number", ok + `,"ranges":[[1]]}`, nil, true},
		{"not pairs", ok + `,"ranges":[1,2]}`, nil, true},
		{"trailing comma", ok + `,"ranges":[[1,2],]}`, nil, true},
		{"truncated", ok + `,"ranges":[[1,2]`, nil, true},
		{"overflow", ok + `,"ranges":[[1,9223372036854775808]]}`, nil, true},
		{"ranges and ids", ok + `,"id":1,"ids":[1,2],"ranges":[[1,2]]}`, nil, true},
		{"ranges and ids, re-encoded", `{ "resp_code": 0, "msg": "success", "ids": [1, 2], "ranges": [[1, 2]] }`, nil, true},
		{"ranges of a dated tag", ok + `,"ranges":[[1,2]],"period_ends_in_ms":5}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decode(nil, []byte(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", d)
				}
				return
			}
			if err != nil || !slices.Equal(d.spans, tc.want) || len(d.ids) != 0 || d.strs != nil || d.dated {
				t.Errorf("got %+v, %v; want spans %v alone", d, err, tc.want)
			}
		})
	}
	if _, err := appendIDs(nil, []byte(ok+`,"ranges":[[1,2]]}`)); !errors.Is(err, errNoIDs) {
		t.Errorf("appendIDs of ranges: %v, want errNoIDs", err)
	}
}

// TestSpansHold: an answer to count=n holds n IDs, no more, no fewer.
func TestSpansHold(t *testing.T) {
	for _, tc := range []struct {
		spans []span
		n     int
		ok    bool
	}{
		{[]span{{1, 10}}, 10, true},
		{[]span{{1, 4}, {10, 15}}, 10, true},
		{[]span{{1, 9}}, 10, false},
		{[]span{{1, 4}, {10, 16}}, 10, false},
		{[]span{{0, 9223372036854775806}}, 10, false},
	} {
		if err := spansHold(tc.spans, tc.n); (err == nil) != tc.ok {
			t.Errorf("spansHold(%v, %d): got %v, want ok %v", tc.spans, tc.n, err, tc.ok)
		}
	}
}
