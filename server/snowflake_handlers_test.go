package server

import (
	"strconv"
	"testing"
	"time"
)

func TestSnowflake(t *testing.T) {
	rg := newRig(t, nil)
	first := rg.flake.next.Load() + 1
	n := strconv.FormatInt(first, 10)
	got := rg.do(t, "GET", "/snowflake", "")
	if want := `{"resp_code":0,"msg":"success","id":` + n + `,"id_str":"` + n + `"}`; got.status != 200 || got.raw != want {
		t.Errorf("got %d %s, want 200 %s", got.status, got.raw, want)
	}
	got = rg.do(t, "GET", "/snowflake?count=2", "")
	a, b := strconv.FormatInt(first+1, 10), strconv.FormatInt(first+2, 10)
	want := `{"resp_code":0,"msg":"success","id":` + a + `,"id_str":"` + a + `","ids":[` + a + `,` + b + `],"ids_str":["` + a + `","` + b + `"]}`
	if got.status != 200 || got.raw != want {
		t.Errorf("got %d %s, want 200 %s", got.status, got.raw, want)
	}
}

func TestDecompose(t *testing.T) {
	rg := newRig(t, nil)
	at := time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC)
	id, err := rg.flake.layout.Compose(at.UnixMilli(), 7, 42)
	if err != nil {
		t.Fatal(err)
	}
	s := strconv.FormatInt(id, 10)
	got := rg.do(t, "GET", "/snowflake/"+s, "")
	want := `{"resp_code":0,"msg":"success","id":` + s + `,"id_str":"` + s + `","time":"2026-11-21T10:00:00.123Z","timestamp_ms":` +
		strconv.FormatInt(at.UnixMilli(), 10) + `,"worker_id":7,"sequence":42}`
	if got.status != 200 || got.raw != want {
		t.Errorf("got %d %s\nwant 200 %s", got.status, got.raw, want)
	}
}
