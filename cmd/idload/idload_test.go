package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseBody(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       response // ids/idsStr nil means none
		wantErr    string   // substring; "" means success
	}{
		{name: "single", body: `{"resp_code":0,"msg":"success","id":1}`,
			want: response{hasCode: true, id: 1, hasID: true, msgPresent: true}},
		{name: "batch", body: `{"resp_code":0,"msg":"success","id":5,"ids":[5,6,7]}`,
			want: response{hasCode: true, id: 5, hasID: true, ids: []int64{5, 6, 7}, hasIDs: true, msgPresent: true}},
		{name: "snowflake", body: `{"resp_code":0,"msg":"success","id":9007199254740993,"id_str":"9007199254740993"}`,
			want: response{hasCode: true, id: 9007199254740993, hasID: true, idStr: 9007199254740993, hasIDStr: true, msgPresent: true}},
		{name: "snowflake batch", body: `{"resp_code":0,"msg":"success","id":10,"id_str":"10","ids":[10,11],"ids_str":["10","11"]}`,
			want: response{hasCode: true, id: 10, hasID: true, idStr: 10, hasIDStr: true, ids: []int64{10, 11}, hasIDs: true, idsStr: []int64{10, 11}, hasIDsStr: true, msgPresent: true}},
		{name: "whitespace and key order", body: " {\n\t\"id\" : 7 ,\r\n \"resp_code\" : 0 } \n",
			want: response{hasCode: true, id: 7, hasID: true}},
		{name: "decoy in a string", body: `{"resp_code":0,"msg":"\"id\":99,\"ids\":[1]","id":1}`,
			want: response{hasCode: true, id: 1, hasID: true, msgPresent: true}},
		{name: "decoy in a nested object", body: `{"resp_code":0,"x":{"id":99,"ids":[1],"y":[{},[],null,true,false,-1.5e+3]},"id":2}`,
			want: response{hasCode: true, id: 2, hasID: true}},
		{name: "error answer", body: `{"resp_code":2,"msg":"unknown app_tag \"x\""}`,
			want: response{hasCode: true, respCode: 2, msgPresent: true}},
		{name: "escaped key", body: `{"resp_code":0,"i\u0064":3}`,
			want: response{hasCode: true, id: 3, hasID: true}},
		{name: "last duplicate key wins", body: `{"resp_code":0,"id":1,"id":2}`,
			want: response{hasCode: true, id: 2, hasID: true}},
		{name: "max int64", body: `{"resp_code":0,"id":9223372036854775807}`,
			want: response{hasCode: true, id: 1<<63 - 1, hasID: true}},
		{name: "negative parses", body: `{"resp_code":0,"id":-5}`,
			want: response{hasCode: true, id: -5, hasID: true}},
		{name: "empty array", body: `{"ids":[]}`, want: response{ids: []int64{}, hasIDs: true}},
		{name: "empty object", body: `{}`, want: response{}},

		{name: "empty body", body: ``, wantErr: "want '{'"},
		{name: "not an object", body: `[1]`, wantErr: "want '{'"},
		{name: "truncated", body: `{"id":1`, wantErr: "want ',' or '}'"},
		{name: "trailing data", body: `{"id":1}x`, wantErr: "trailing"},
		{name: "float id", body: `{"id":1.5}`, wantErr: "not an integer"},
		{name: "exponent id", body: `{"id":1e3}`, wantErr: "not an integer"},
		{name: "leading zero", body: `{"id":01}`, wantErr: "leading zero"},
		{name: "overflow", body: `{"id":9223372036854775808}`, wantErr: "not an integer"},
		{name: "string id", body: `{"id":"1"}`, wantErr: "want a number"},
		{name: "trailing comma", body: `{"ids":[1,2,]}`, wantErr: "want a number"},
		{name: "bad id_str", body: `{"id_str":"12a"}`, wantErr: "not an integer"},
		{name: "unterminated string", body: `{"msg":"abc}`, wantErr: "unterminated"},
		{name: "control character", body: "{\"msg\":\"a\nb\"}", wantErr: "control character"},
		{name: "bad literal", body: `{"a":tru}`, wantErr: "want a value"},
		{name: "bad escape", body: `{"msg":"\q"}`, wantErr: "bad escape"},
		{name: "missing colon", body: `{"id" 1}`, wantErr: "want ':'"},
		{name: "too deep", body: `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, wantErr: "too deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			r.ids = make([]int64, 0, 1) // stale storage must not leak into the answer
			r.ids = append(r.ids, 42)
			err := parseBody([]byte(tc.body), &r)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if !sameResponse(r, tc.want) {
				t.Errorf("got  %+v\nwant %+v", r, tc.want)
			}
		})
	}
}

func sameResponse(a, b response) bool {
	for _, r := range []*response{&a, &b} { // nil and empty are the same here
		if len(r.ids) == 0 {
			r.ids = nil
		}
		if len(r.idsStr) == 0 {
			r.idsStr = nil
		}
	}
	return reflect.DeepEqual(a, b)
}

func TestParseBodyAllocates(t *testing.T) {
	body := []byte(`{"resp_code":0,"msg":"success","id":5,"id_str":"5","ids":[5,6,7],"ids_str":["5","6","7"]}`)
	var r response
	_ = parseBody(body, &r)
	if n := testing.AllocsPerRun(100, func() { _ = parseBody(body, &r) }); n != 0 {
		t.Errorf("parseBody allocates %v times per call once warm, want 0", n)
	}
}

func TestCheckSuccess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		mode    mode
		count   int
		want    []int64
		wantErr string
	}{
		{"single", `{"resp_code":0,"id":3}`, modeSegment, 0, []int64{3}, ""},
		{"batch", `{"resp_code":0,"id":3,"ids":[3,4,9]}`, modeSegment, 3, []int64{3, 4, 9}, ""},
		{"bare", `{"resp_code":0,"msg":"success","id":8}`, modeBare, 0, []int64{8}, ""},
		{"snowflake", `{"resp_code":0,"id":77,"id_str":"77"}`, modeSnowflake, 0, []int64{77}, ""},
		{"snowflake batch", `{"resp_code":0,"id":7,"id_str":"7","ids":[7,8],"ids_str":["7","8"]}`, modeSnowflake, 2, []int64{7, 8}, ""},

		{"no id", `{"resp_code":0}`, modeSegment, 0, nil, `no "id"`},
		{"no ids", `{"resp_code":0,"id":3}`, modeSegment, 2, nil, `no "ids"`},
		{"short batch", `{"resp_code":0,"id":3,"ids":[3]}`, modeSegment, 2, nil, "but 1 ids"},
		{"id is not ids[0]", `{"resp_code":0,"id":2,"ids":[3,4]}`, modeSegment, 2, nil, "is not ids[0]"},
		{"batch not increasing", `{"resp_code":0,"id":3,"ids":[3,3]}`, modeSegment, 2, nil, "strictly increasing"},
		{"single with other ids", `{"resp_code":0,"id":3,"ids":[4]}`, modeSegment, 0, nil, "not [\"id\"]"},
		{"segment zero", `{"resp_code":0,"id":0}`, modeSegment, 0, nil, "below 1"},
		{"snowflake without id_str", `{"resp_code":0,"id":77}`, modeSnowflake, 0, nil, "id_str"},
		{"snowflake id_str differs", `{"resp_code":0,"id":77,"id_str":"78"}`, modeSnowflake, 0, nil, "id_str"},
		{"snowflake ids_str differs", `{"resp_code":0,"id":7,"id_str":"7","ids":[7,8],"ids_str":["7","9"]}`, modeSnowflake, 2, nil, "ids_str"},
		{"snowflake negative", `{"resp_code":0,"id":-1,"id_str":"-1"}`, modeSnowflake, 0, nil, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			if err := parseBody([]byte(tc.body), &r); err != nil {
				t.Fatal(err)
			}
			var one [1]int64
			ids, err := checkSuccess(&r, tc.mode, tc.count, &one)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(ids, tc.want) {
				t.Fatalf("ids, err = %v, %v; want %v", ids, err, tc.want)
			}
		})
	}
}

func TestFindDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lists    [][]int64
		dups     int64
		examples []int64
	}{
		{"none", [][]int64{{1, 3, 5}, {2, 4, 6}, {}}, 0, nil},
		{"empty", nil, 0, nil},
		{"across lists", [][]int64{{1, 3, 5}, {2, 3, 6}}, 1, []int64{3}},
		{"within a list", [][]int64{{1, 2, 2, 3}}, 1, []int64{2}},
		{"three times counts twice", [][]int64{{7}, {7}, {1, 7}}, 2, []int64{7}},
		{"unsorted list", [][]int64{{5, 1, 3}, {3}}, 1, []int64{3}},
		{"many", [][]int64{{1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 7}}, 7, []int64{1, 2, 3, 4, 5}},
		{"negative and large", [][]int64{{-1, 1 << 62}, {1 << 62}}, 1, []int64{1 << 62}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var total int64
			for _, l := range tc.lists {
				total += int64(len(l))
			}
			d := findDuplicates(tc.lists)
			if d.Checked != total || d.Duplicates != tc.dups || !slices.Equal(d.Examples, tc.examples) {
				t.Errorf("got %+v, want checked %d, %d duplicates, examples %v", d, total, tc.dups, tc.examples)
			}
		})
	}
}

func TestKeeperOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches [][]int64
		bad     int // order violations
	}{
		{"increasing", [][]int64{{1}, {2}, {5, 6, 7}, {100}}, 0},
		{"equal", [][]int64{{1}, {1}}, 1},
		{"backwards", [][]int64{{10}, {5}, {11}}, 1},
		{"batch overlaps", [][]int64{{1, 2, 3}, {3, 4}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeeper()
			bad := 0
			var all []int64
			for _, b := range tc.batches {
				if ok, _ := k.add(b, true); !ok {
					bad++
				}
				all = append(all, b...)
			}
			if bad != tc.bad || !slices.Equal(k.ids, all) || k.sorted != (tc.bad == 0) {
				t.Errorf("violations %d (want %d), kept %v, sorted %v", bad, tc.bad, k.ids, k.sorted)
			}
		})
	}
}

func TestValidateTargets(t *testing.T) {
	for _, tc := range []struct {
		url         string
		allowRemote bool
		ok          bool
		client      string
	}{
		{"http://127.0.0.1:8880", false, true, ""},
		{"http://localhost:8880/", false, true, ""},
		{"http://[::1]:8880", false, true, ""},
		{"http://127.8.9.10:1", false, true, ""},
		{"http://10.0.0.1:8880", false, false, ""},
		{"http://example.com", false, false, ""},
		{"http://example.com", true, true, ""},
		{"ftp://127.0.0.1", false, false, ""},
		{"http://127.0.0.1:8880/?x=1", false, false, ""},
		{"https://127.0.0.1:8443", false, true, ""},
		{"https://127.0.0.1:8443", false, false, "raw"},
		{"http://127.0.0.1:8880", false, true, "raw"},
		{"http://127.0.0.1:8880", false, false, "fast"},
	} {
		if tc.client == "" {
			tc.client = "http"
		}
		cfg := config{URLs: []string{tc.url}, Mode: modeSegment, Tag: "t", Clients: 1,
			Duration: time.Second, Timeout: time.Second, Client: tc.client, AllowRemote: tc.allowRemote}
		if err := cfg.validate(); (err == nil) != tc.ok {
			t.Errorf("%s (client %s, allow-remote %v): err = %v, want ok %v", tc.url, tc.client, tc.allowRemote, err, tc.ok)
		}
	}
	for _, rate := range []float64{-1, maxRate + 1} {
		cfg := config{URLs: []string{"http://127.0.0.1:8880"}, Mode: modeSegment, Tag: "t", Clients: 1,
			Duration: time.Second, Timeout: time.Second, Client: "raw", Rate: rate}
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "-rate") {
			t.Errorf("rate %g: err = %v, want one naming -rate", rate, err)
		}
	}
}

// fakeIDServer answers /alloc and /snowflake like idalloc, with next
// choosing each ID (so a test can make it hand out duplicates).
func fakeIDServer(t *testing.T, next func() int64) *httptest.Server {
	h := http.NewServeMux()
	write := func(w http.ResponseWriter, r *http.Request, strs bool) {
		w.Header().Set("Content-Type", "application/json")
		n, _ := strconv.Atoi(r.URL.Query().Get("count"))
		if n == 0 {
			id := next()
			if strs {
				fmt.Fprintf(w, `{"resp_code":0,"msg":"success","id":%d,"id_str":"%d"}`, id, id)
			} else {
				fmt.Fprintf(w, `{"resp_code":0,"msg":"success","id":%d}`, id)
			}
			return
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = strconv.FormatInt(next(), 10)
		}
		b := fmt.Sprintf(`{"resp_code":0,"msg":"success","id":%s,"ids":[%s]`, ids[0], strings.Join(ids, ","))
		if strs {
			b += fmt.Sprintf(`,"id_str":"%s","ids_str":["%s"]`, ids[0], strings.Join(ids, `","`))
		}
		io.WriteString(w, b+"}")
	}
	h.HandleFunc("GET /alloc", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("app_tag") == "nope" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"resp_code":2,"msg":"unknown app_tag"}`)
			return
		}
		write(w, r, false)
	})
	h.HandleFunc("GET /snowflake", func(w http.ResponseWriter, r *http.Request) { write(w, r, true) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestRun(t *testing.T) {
	var clean atomic.Int64
	good := fakeIDServer(t, func() int64 { return clean.Add(1) })
	var dupCounter atomic.Int64
	dupy := fakeIDServer(t, func() int64 {
		n := dupCounter.Add(1)
		return n - n%2 + 2 // 2, 4, 4, 6, 6, ...: increasing per client, repeated across clients
	})
	for _, client := range []string{"http", "raw"} {
		for _, tc := range []struct {
			name     string
			srv      *httptest.Server
			mode     mode
			tag      string
			count    int
			pass     bool
			wantDups bool
			wantCode string
		}{
			{"segment", good, modeSegment, "t", 0, true, false, ""},
			{"segment batch (chunked body)", good, modeSegment, "t", 1000, true, false, ""},
			{"snowflake", good, modeSnowflake, "", 0, true, false, ""},
			{"snowflake batch", good, modeSnowflake, "", 50, true, false, ""},
			{"bare", good, modeBare, "t", 0, true, false, ""},
			{"duplicates", dupy, modeSegment, "t", 0, false, true, ""},
			{"unknown tag", good, modeSegment, "nope", 0, true, false, "2"},
		} {
			t.Run(client+"/"+tc.name, func(t *testing.T) {
				cfg := config{URLs: []string{tc.srv.URL, tc.srv.URL + "/"}, Mode: tc.mode, Tag: tc.tag, Count: tc.count,
					Clients: 4, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond, Timeout: 5 * time.Second,
					Client: client, KeepIDs: true, MaxIDs: 1 << 30}
				rep, err := run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Pass != tc.pass || (rep.Duplicates > 0) != tc.wantDups {
					t.Fatalf("pass %v, %d duplicates (want pass %v, duplicates %v); examples %v",
						rep.Pass, rep.Duplicates, tc.pass, tc.wantDups, rep.Examples)
				}
				if tc.wantCode != "" {
					if rep.ErrorsByRespCode[tc.wantCode] == 0 || rep.OK != 0 || rep.HTTPStatus["404"] == 0 {
						t.Fatalf("errors %v, ok %d, statuses %v", rep.ErrorsByRespCode, rep.OK, rep.HTTPStatus)
					}
					return
				}
				if rep.OK == 0 || rep.Errors != 0 || rep.Malformed != 0 || rep.OrderViolations != 0 {
					t.Fatalf("ok %d, errors %d, malformed %d, order %d; examples %v", rep.OK, rep.Errors, rep.Malformed, rep.OrderViolations, rep.Examples)
				}
				per := int64(max(tc.count, 1))
				if rep.IDs != rep.OK*per || rep.IDsChecked < rep.IDs || rep.DupCheck != "complete" {
					t.Fatalf("ids %d for %d ok answers of %d, checked %d (%s)", rep.IDs, rep.OK, per, rep.IDsChecked, rep.DupCheck)
				}
				if rep.P50Us <= 0 || rep.P999Us < rep.P50Us || rep.ReqPerS <= 0 {
					t.Fatalf("p50 %v, p999 %v, req/s %v", rep.P50Us, rep.P999Us, rep.ReqPerS)
				}
			})
		}
	}
}

func TestRunRequestCount(t *testing.T) {
	var n atomic.Int64
	srv := fakeIDServer(t, func() int64 { return n.Add(1) })
	cfg := config{URLs: []string{srv.URL}, Mode: modeSegment, Tag: "t", Clients: 3, Duration: 10 * time.Second,
		Requests: 100, Timeout: time.Second, Client: "raw", KeepIDs: true, MaxIDs: 1000}
	rep, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK != 100 || rep.IDsChecked != 100 || !rep.Pass || rep.ElapsedS >= 10 {
		t.Fatalf("ok %d, checked %d, pass %v, elapsed %.1fs", rep.OK, rep.IDsChecked, rep.Pass, rep.ElapsedS)
	}
}

func TestMainRefusesRemote(t *testing.T) {
	var out, errOut strings.Builder
	if code := mainErr([]string{"-url", "http://192.0.2.1:8880", "-d", "1s"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "-allow-remote") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}
