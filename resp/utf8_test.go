package resp

import (
	"context"
	"slices"
	"testing"

	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestHSETDescriptionNotText sends HSET with descriptions that are not
// text, on the real domain and each store driver: each is refused with
// ERR and the domain's words naming the description (POST /tags answers
// the same msg), the tag does not exist afterwards and the store holds
// nothing new. The mysql run is issue 19's case: HSET t description
// "ok\xc3" reached MariaDB, which refused the bytes (error 1366), and
// that refusal was answered TRYAGAIN, which clients retry for ever.
func TestHSETDescriptionNotText(t *testing.T) {
	want := "ERR " + segment.ErrDescriptionNotText.Error()
	refused := []struct{ name, desc string }{
		{"cut inside a character", "ok\xc3"},
		{"Latin-1", "caf\xe9"},
		{"UTF-8 of a surrogate", "\xed\xa0\x80"},
		{"NUL", "ok\x00"},
		{"line break", "ok\r\nlevel=ERROR"},
		{"escape sequence", "\x1b[31mred"},
		{"DEL", "ok\x7f"},
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			st, _, rdb := adminClient(t, d)

			for _, c := range refused {
				err := rdb.Do(ctx, "HSET", "t", "step", 10, "description", c.desc).Err()
				if err == nil || err.Error() != want {
					t.Errorf("%s: HSET got %v, want %q", c.name, err, want)
				}
				err = rdb.Do(ctx, "GET", "t").Err()
				if err == nil || err.Error() != "ERR "+segment.ErrUnknownTag.Error() {
					t.Errorf("%s: GET of the refused tag got %v, want the unknown tag's error", c.name, err)
				}
			}
			frontendtest.CheckUnchanged(t, st)

			const text = "numéros 订单 📦 \ufffd"
			if err := rdb.Do(ctx, "HSET", "t", "description", text).Err(); err != nil {
				t.Fatalf("HSET of a description that is text: %v", err)
			}
			tags, err := st.Tags(ctx)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(tags, func(tg segment.Tag) bool { return tg.AppTag == "t" })
			if i < 0 || tags[i].Description != text {
				t.Errorf("the store holds %+v, want tag t with description %q", tags, text)
			}
		})
	}
}
