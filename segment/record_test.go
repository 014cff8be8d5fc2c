package segment_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// TestTagRecord pins a tag's record as encoding/json writes it, the bytes
// of POST /tags' answer and of a tag.create audit detail: its settings
// from the row's FormatSpec, or from the format the allocator serves it
// in, and none for a row this build cannot read.
func TestTagRecord(t *testing.T) {
	const spec = "v1;period=hour;time_zone=Asia/Shanghai;prefix=ORD;separator=-"
	served, err := dated.New(dated.Settings{Period: dated.Hour, TimeZone: "Asia/Shanghai", Prefix: "ORD", Separator: "-"})
	if err != nil {
		t.Fatal(err)
	}
	ord := segment.Tag{AppTag: "ord", Step: 1000, Start: 1, Description: "orders", Format: segment.FormatDated,
		Length: 6, FormatSpec: spec}
	const ordJSON = `{"app_tag":"ord","step":1000,"start":1,"description":"orders","format":"dated","length":6,` +
		`"period":"hour","time_zone":"Asia/Shanghai","prefix":"ORD","separator":"-"}`
	tests := []struct {
		name   string
		tag    segment.Tag
		served *dated.Format
		want   string
	}{
		{"sequential", segment.Tag{AppTag: "seq", Step: 10, Start: 1, MaxID: 99, Format: segment.FormatSequential},
			nil, `{"app_tag":"seq","step":10,"start":1,"description":"","format":"sequential","length":0}`},
		{"scrambled: never its key", segment.Tag{AppTag: "scr", Step: 10, Start: 1, Format: segment.FormatScrambled,
			Length: 8, FormatKey: make([]byte, 32)},
			nil, `{"app_tag":"scr","step":10,"start":1,"description":"","format":"scrambled","length":8}`},
		{"dated, from its spec", ord, nil, ordJSON},
		{"dated, from the served format", ord, served, ordJSON},
		{"dated, served: its spec unread", segment.Tag{AppTag: "ord", Step: 1000, Start: 1, Description: "orders",
			Format: segment.FormatDated, Length: 6}, served, ordJSON},
		{"dated, a newer version's spec", segment.Tag{AppTag: "new", Step: 1, Start: 1, Format: segment.FormatDated,
			Length: 6, FormatSpec: "v2;period=day"},
			nil, `{"app_tag":"new","step":1,"start":1,"description":"","format":"dated","length":6}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.tag.Record(tt.served))
			if err != nil || string(got) != tt.want {
				t.Errorf("Record = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// TestTagDatedFormat: a dated row's format is its spec with its length
// and start; a row without a length is refused, as the allocator refuses
// to serve it.
func TestTagDatedFormat(t *testing.T) {
	row := segment.Tag{AppTag: "ord", Step: 1, Start: 5, Format: segment.FormatDated, Length: 4,
		FormatSpec: "v1;period=day;time_zone=UTC;prefix=;separator="}
	f, err := row.DatedFormat()
	if err != nil || f.Period() != dated.Day || f.Length() != 4 || f.Start() != 5 {
		t.Fatalf("DatedFormat = %+v, %v; want day, length 4, start 5", f, err)
	}
	row.Length = 0
	if _, err := row.DatedFormat(); !errors.Is(err, dated.ErrInvalidLength) {
		t.Errorf("DatedFormat of a row without length = %v, want %v", err, dated.ErrInvalidLength)
	}
	row.Length, row.FormatSpec = 4, "v1;period=day"
	if _, err := row.DatedFormat(); !errors.Is(err, dated.ErrInvalidSpec) {
		t.Errorf("DatedFormat of a bad spec = %v, want %v", err, dated.ErrInvalidSpec)
	}
}
