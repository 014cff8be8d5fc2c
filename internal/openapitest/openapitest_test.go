//go:build openapi

package openapitest

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// jsonHeader is the header of an envelope answer; extra are name, value
// pairs added to it.
func jsonHeader(extra ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

// TestCheck holds the checks to docs/openapi.yaml with answers made by
// hand: those the description allows pass, and each way of breaking one
// fails naming what is wrong.
func TestCheck(t *testing.T) {
	spec, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	const unavailable = `{"resp_code":3,"msg":"unavailable","kind":"unavailable"}`
	tests := []struct {
		name           string
		method, target string
		reqBody        string
		status         int
		header         http.Header
		body           []byte
		want           string // "" for no error, else words the error has
	}{
		{"an ID", "GET", "/alloc?app_tag=order", "", 200, jsonHeader(), []byte(`{"resp_code":0,"msg":"success","id":1}`), ""},
		{"a batch", "GET", "/alloc?app_tag=order&count=2", "", 200, jsonHeader(), []byte(`{"resp_code":0,"msg":"success","id":1,"ids":[1,2]}`), ""},
		{"an ID as a string", "GET", "/alloc?app_tag=order", "", 200, jsonHeader(), []byte(`{"resp_code":0,"msg":"success","id":"1"}`), "$.id"},
		{"a field not described", "GET", "/alloc?app_tag=order", "", 200, jsonHeader(), []byte(`{"resp_code":0,"msg":"success","id":1,"extra":1}`), "$.extra"},
		{"no Cache-Control", "GET", "/alloc?app_tag=order", "", 200, http.Header{"Content-Type": {"application/json"}},
			[]byte(`{"resp_code":0,"msg":"success","id":1}`), "Cache-Control"},
		{"a 503", "GET", "/alloc?app_tag=order", "", 503, jsonHeader("Retry-After", "1", "X-Request-Id", "r-1"), []byte(unavailable), ""},
		{"a 503 without Retry-After", "GET", "/alloc?app_tag=order", "", 503, jsonHeader("X-Request-Id", "r-1"), []byte(unavailable), "Retry-After"},
		{"an error without X-Request-Id", "GET", "/alloc?app_tag=order", "", 503, jsonHeader("Retry-After", "1"), []byte(unavailable), "X-Request-Id"},
		{"a status not described", "GET", "/alloc?app_tag=order", "", 418, jsonHeader(), []byte(`{}`), "418"},
		{"a kind of another status", "GET", "/alloc?app_tag=order", "", 400, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":2,"msg":"unknown app_tag","kind":"unknown_tag","field":"app_tag"}`), "kind"},
		{"an error's field not described", "GET", "/alloc?app_tag=order", "", 400, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":1,"msg":"invalid count","kind":"bad_request","field":"count","extra":1}`), "$.extra"},
		{"a resp_code not the kind's", "GET", "/alloc?app_tag=order", "", 400, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":2,"msg":"invalid count","kind":"bad_request","field":"count"}`), "resp_code"},
		{"an internal error without request_id", "GET", "/alloc?app_tag=order", "", 500, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":8,"msg":"internal error","kind":"internal"}`), "request_id"},
		{"a time not RFC 3339", "GET", "/snowflake/5", "", 200, jsonHeader(),
			[]byte(`{"resp_code":0,"msg":"success","id":5,"id_str":"5","time":"yesterday","timestamp_ms":1,"worker_id":0,"sequence":5}`), "$.time"},
		{"a gzipped answer, read as the client reads it", "GET", "/status", "", 200, jsonHeader("Content-Encoding", "gzip"),
			gzipped(`{"resp_code":0,"msg":"success"}`), "now"},
		{"Leaf's text", "GET", "/api/segment/get/order", "", 200,
			http.Header{"Content-Type": {"text/plain;charset=UTF-8"}, "Cache-Control": {"no-store"}}, []byte("12"), ""},
		{"Leaf's text that is not an ID", "GET", "/api/segment/get/order", "", 200,
			http.Header{"Content-Type": {"text/plain;charset=UTF-8"}, "Cache-Control": {"no-store"}}, []byte("12 "), "pattern"},
		{"a path not listed", "GET", "/nope", "", 404, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":2,"msg":"unknown route","kind":"unknown_route"}`), ""},
		{"a path not listed, answered", "GET", "/nope", "", 200, jsonHeader(), []byte(`{"resp_code":0,"msg":"success"}`), "must be 404"},
		{"an empty parameter is no route", "PATCH", "/tags/", "", 404, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":2,"msg":"unknown route","kind":"unknown_route"}`), ""},
		{"a method not listed", "PUT", "/alloc", "", 405, jsonHeader("X-Request-Id", "r-1", "Allow", "GET"),
			[]byte(`{"resp_code":9,"msg":"method not allowed","kind":"method_not_allowed"}`), ""},
		{"a method not listed, without Allow", "PUT", "/alloc", "", 405, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":9,"msg":"method not allowed","kind":"method_not_allowed"}`), "Allow"},
		{"an accepted request the description refuses", "GET", "/alloc?app_tag=no%20spaces", "", 200, jsonHeader(),
			[]byte(`{"resp_code":0,"msg":"success","id":1}`), "app_tag"},
		{"a refused request is not checked", "GET", "/alloc?app_tag=no%20spaces", "", 400, jsonHeader("X-Request-Id", "r-1"),
			[]byte(`{"resp_code":1,"msg":"invalid app_tag","kind":"bad_request","field":"app_tag"}`), ""},
		{"an accepted body the description refuses", "POST", "/tags", `{"app_tag":"t","step":0}`, 201, jsonHeader(),
			[]byte(`{"resp_code":0,"msg":"success","app_tag":"t","step":1,"start":1,"description":"","format":"sequential","length":0}`), "step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			if tt.reqBody != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			err := spec.Check(Exchange{Request: r, RequestBody: []byte(tt.reqBody), Status: tt.status, Header: tt.header, Body: tt.body})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Errorf("Check = nil, want an error naming %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("Check = %v, want it to name %q", err, tt.want)
			}
		})
	}
}

// TestServe: the exchange is what the handler read and wrote, and the
// client gets the answer unchanged.
func TestServe(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 3)
		_, _ = r.Body.Read(buf) // a handler that reads part of the body
		w.Header().Set("X-A", "1")
		w.WriteHeader(http.StatusCreated)
		w.Header().Set("X-B", "after the header was sent")
		_, _ = w.Write([]byte("hello"))
	})
	rec := httptest.NewRecorder()
	x := Serve(h, rec, httptest.NewRequest("POST", "/x", strings.NewReader("abcdef")))
	if string(x.RequestBody) != "abc" {
		t.Errorf("RequestBody = %q, want what the handler read, %q", x.RequestBody, "abc")
	}
	if x.Status != http.StatusCreated || string(x.Body) != "hello" || x.Header.Get("X-A") != "1" || x.Header.Get("X-B") != "" {
		t.Errorf("exchange = %d %v %q, want 201, the header as sent and hello", x.Status, x.Header, x.Body)
	}
	if rec.Code != http.StatusCreated || rec.Body.String() != "hello" {
		t.Errorf("the client got %d %q, want 201 hello", rec.Code, rec.Body)
	}
}
