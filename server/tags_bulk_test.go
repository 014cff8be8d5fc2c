package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// CreateTags makes fakeSegments a Segments: each tag as CreateTag makes
// it, those that exist left out and reported as the allocator does. The
// allocator's own rules for a request (the entries checked first, an
// app_tag given twice) are tested on the allocator (TestCreateTagsRefusals).
func (f *fakeSegments) CreateTags(ctx context.Context, nts []segment.NewTag) ([]segment.Tag, error) {
	f.record(fmt.Sprintf("CreateTags %d", len(nts)))
	if f.err != nil {
		return nil, f.err
	}
	var made []segment.Tag
	var existed error
	for _, nt := range nts {
		t, err := f.CreateTag(ctx, nt)
		switch {
		case errors.Is(err, segment.ErrTagExists):
			existed = err
		case err != nil:
			return made, err
		default:
			made = append(made, t)
		}
	}
	return made, existed
}

// bulkBody is a POST /tags array of n tags named prefix-0000 on, with
// extra fields in each.
func bulkBody(prefix string, n int, extra string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"app_tag":"%s-%04d","step":10%s}`, prefix, i, extra)
	}
	b.WriteByte(']')
	return b.String()
}

// tagNames lists the app_tags of an answer's "tags".
func tagNames(r reply) []string {
	var out []string
	list, _ := r.body["tags"].([]any)
	for _, x := range list {
		out = append(out, x.(map[string]any)["app_tag"].(string))
	}
	return out
}

// TestCreateTagsBulk: POST /tags with an array creates every tag on the
// allocator and the store of each driver, answers them in order as the
// one-tag answer has them, serves them at once, and writes the audit log
// a run of tags an entry, each within MySQL's TEXT.
func TestCreateTagsBulk(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			rg := newAuthRig(t, d.NewDB(t), false, 0)
			got := rg.do(t, "POST", "/tags", `[{"app_tag":"a","step":10,"start":500,"description":"first"},
				{"app_tag":"b","step":20,"format":"fixed_length","length":8},{"app_tag":"c","step":30}]`, adminAuth...)
			if got.status != http.StatusCreated || got.code() != 0.0 || strings.Join(tagNames(got), ",") != "a,b,c" {
				t.Fatalf("POST /tags: %d %s, want 201 with a, b and c", got.status, got.raw)
			}
			first := got.body["tags"].([]any)[0].(map[string]any)
			one := rg.do(t, "POST", "/tags", `{"app_tag":"d","step":10,"start":500,"description":"first"}`, adminAuth...)
			for k, v := range one.body {
				if k != "resp_code" && k != "msg" && k != "app_tag" && first[k] != v {
					t.Errorf("an entry's %s = %v, the one-tag answer's %v", k, first[k], v)
				}
			}
			if b := got.body["tags"].([]any)[1].(map[string]any); b["start"] != 10_000_000.0 || b["format"] != "fixed_length" {
				t.Errorf("b as created: %v, want the fixed_length start 10000000", b)
			}
			if a := rg.do(t, "GET", "/alloc?app_tag=a", ""); a.body["id"] != 500.0 {
				t.Errorf("the first ID of a: %s, want 500", a.raw)
			}

			// 1,200 tags of long descriptions: several audit entries, each
			// under 60 KB, together listing every tag once.
			desc := strings.Repeat("é", 200)
			if got := rg.do(t, "POST", "/tags", bulkBody("many", 1200, `,"description":"`+desc+`"`), adminAuth...); got.status != http.StatusCreated || len(tagNames(got)) != 1200 {
				t.Fatalf("POST /tags of 1,200: %d, %d tags", got.status, len(tagNames(got)))
			}
			audit := rg.do(t, "GET", "/audit?limit=1000", "", adminAuth...)
			seen := map[string]int{}
			entries := 0
			for _, x := range audit.body["entries"].([]any) {
				e := x.(map[string]any)
				if e["action"] != "tag.create" || e["subject"] != "" {
					continue
				}
				entries++
				detail, _ := json.Marshal(e["detail"])
				if len(detail) > auditDetailBytes {
					t.Errorf("an audit detail of %d bytes, want at most %d", len(detail), auditDetailBytes)
				}
				var d struct {
					Count int                 `json:"count"`
					Tags  []segment.TagRecord `json:"tags"`
				}
				if err := json.Unmarshal(detail, &d); err != nil || d.Count != len(d.Tags) {
					t.Fatalf("audit detail %s: %v", detail, err)
				}
				for _, c := range d.Tags {
					seen[c.AppTag]++
				}
			}
			if entries < 2 || len(seen) != 1203 || seen["a"] != 1 || seen["many-1199"] != 1 {
				t.Errorf("%d bulk audit entries naming %d tags, want several naming the 1,203 once each", entries, len(seen))
			}
		})
	}
}

// TestCreateTagsRefusals: an array that cannot be created whole is refused
// naming the entry at fault by its index, and creates nothing.
func TestCreateTagsRefusals(t *testing.T) {
	tests := []struct {
		name, body, field string
	}{
		{"array too long", bulkBody("t", maxBulkTags+1, ""), "tags"},
		{"empty array", `[]`, "tags"},
		{"a bad entry", `[{"app_tag":"a","step":10},{"app_tag":"b","step":0}]`, "tags[1].step"},
		{"a bad tag", `[{"app_tag":"a","step":10},{"app_tag":"b c","step":10}]`, "tags[1].app_tag"},
		{"a step that is not a number", `[{"app_tag":"a","step":"ten"}]`, "tags[0].step"},
		{"an entry without app_tag", `[{"app_tag":"a","step":10},{"app_tag":"b","step":10},{"step":10}]`, "tags[2].app_tag"},
		{"an unknown field", `[{"app_tag":"a","step":10,"stpe":5}]`, "tags[0]"},
		{"a field given twice", `[{"app_tag":"a","step":10,"step":10}]`, "tags[0]"},
		{"an entry that is not an object", `[{"app_tag":"a","step":10},5]`, "tags[1]"},
		{"a duplicate within the array", `[{"app_tag":"a","step":10},{"app_tag":"b","step":10},{"app_tag":"a","step":20}]`, "tags[2].app_tag"},
		{"a description that is not text", `[{"app_tag":"a","step":10,"description":"\ud800"}]`, "tags[0].description"},
		{"a dated field on another format", `[{"app_tag":"a","step":10,"period":"day"}]`, "tags[0].period"},
		{"not an array of objects", `[{"app_tag":"a","step":10}`, "body"},
		{"a body over 8 MiB", `[` + strings.Repeat(" ", maxBulkBodyBytes) + `]`, "body"},
		{"one tag over 64 KiB", `{"app_tag":"a","step":10,"description":"` + strings.Repeat(" ", maxBodyBytes) + `"}`, "body"},
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			rg := newAuthRig(t, d.NewDB(t), false, 0)
			for _, tt := range tests {
				got := rg.do(t, "POST", "/tags", tt.body, adminAuth...)
				if got.status != http.StatusBadRequest || got.code() != 1.0 || got.body["field"] != tt.field {
					t.Errorf("%s: %d %.300s, want 400 naming %s", tt.name, got.status, got.raw, tt.field)
				}
				if msg, _ := got.body["msg"].(string); tt.field != "body" && !strings.Contains(msg, tt.field) {
					t.Errorf("%s: the message %q does not name %s", tt.name, msg, tt.field)
				}
			}
			if l := rg.list(t, "/tags"); len(l.tags) != 1 { // the seeded test_business
				t.Errorf("refused requests created %v", l.tags)
			}
			audit := rg.do(t, "GET", "/audit", "", adminAuth...)
			if n := len(audit.body["entries"].([]any)); n != 0 {
				t.Errorf("refused requests wrote %d audit entries", n)
			}
		})
	}
}

// TestCreateTagsSomeExist: entries whose tags exist are left as they are
// and the others created; the answer is resp_code 10 naming the first
// that existed, with the tags created, and they are audited.
func TestCreateTagsSomeExist(t *testing.T) {
	rg := newAuthRig(t, storetest.SQLite().NewDB(t), false, 0)
	got := rg.do(t, "POST", "/tags", `[{"app_tag":"a","step":10},{"app_tag":"test_business","step":10},{"app_tag":"b","step":10}]`, adminAuth...)
	if got.status != http.StatusConflict || got.code() != 10.0 || got.body["field"] != "tags[1].app_tag" ||
		strings.Join(tagNames(got), ",") != "a,b" {
		t.Fatalf("got %d %s, want 409 naming tags[1].app_tag with a and b created", got.status, got.raw)
	}
	if l := rg.list(t, "/tags"); strings.Join(l.tags, ",") != "a,b,test_business" {
		t.Errorf("tags now %v", l.tags)
	}
	audit := rg.do(t, "GET", "/audit", "", adminAuth...)
	if !strings.Contains(audit.raw, `"count":2`) {
		t.Errorf("the audit log lacks the two created: %s", audit.raw)
	}
}

// TestCreateTagsFake: on the fake, an error before any tag is created is
// answered as it is, without a list.
func TestCreateTagsFake(t *testing.T) {
	rg := newRig(t, nil)
	rg.seg.err = segment.ErrUnavailable
	got := rg.do(t, "POST", "/tags", bulkBody("x", 3, ""), adminAuth...)
	if got.status != http.StatusServiceUnavailable || got.body["tags"] != nil {
		t.Errorf("got %d %s, want 503 without tags", got.status, got.raw)
	}
}
