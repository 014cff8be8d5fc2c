package segment_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// TestDescriptionMustBeText pins which descriptions are text (UTF-8,
// without control characters) and shows that the others are refused as
// bad input naming the description, by CheckNewTag and by CreateTag
// before the store: the fake store fails every call here, as MySQL fails
// an insert of bytes that are not UTF-8, so a refusal that reached it
// would come back unavailable (which clients retry for ever) instead.
func TestDescriptionMustBeText(t *testing.T) {
	const notText = "invalid description: must be UTF-8 text without control characters (NUL, tab, line breaks)"
	tests := []struct {
		name string
		desc string
		ok   bool
	}{
		{"ASCII", "orders of the shop", true},
		{"accents", "numéros de commande", true},
		{"CJK", "订单号", true},
		{"emoji of four bytes", "orders 📦", true},
		{"emoji joined by ZWJ", "👩\u200d💻 team", true}, // U+200D is a format character, not a control
		{"right-to-left mark", "\u200fהזמנות", true},
		{"replacement character sent as such", "a \ufffd b", true},
		{"256 characters of two bytes", strings.Repeat("é", segment.MaxDescription), true},

		{"cut inside a character", "ok\xc3", false},
		{"lone continuation byte", "\x80ok", false},
		{"overlong slash", "a\xc0\xafb", false},
		{"UTF-8 of a surrogate", "\xed\xa0\x80", false},
		{"above U+10FFFF", "\xf4\x90\x80\x80", false},
		{"Latin-1 byte", "caf\xe9", false},
		{"NUL", "ok\x00", false},
		{"tab", "a\tb", false},
		{"line feed", "ok\nlevel=ERROR msg=forged", false},
		{"carriage return", "ok\r", false},
		{"escape", "\x1b[31mred", false},
		{"DEL", "ok\x7f", false},
		{"C1 next line", "ok\u0085", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := segment.NewTag{AppTag: "t", Step: 10, Description: tt.desc}
			_, err := segment.CheckNewTag(tag, 1000)
			if tt.ok {
				if err != nil {
					t.Fatalf("CheckNewTag = %v, want no error", err)
				}
				return
			}
			checkNotText(t, "CheckNewTag", err, notText)

			st := newFakeStore()
			a := alloctest.New(t, st, segment.Config{MaxStep: 1000})
			st.failing.Store(true)
			_, err = a.CreateTag(context.Background(), tag)
			checkNotText(t, "CreateTag", err, notText)
			st.mu.Lock()
			defer st.mu.Unlock()
			if _, ok := st.rows["t"]; ok {
				t.Error("the store holds the refused tag")
			}
			for _, r := range a.Tags() {
				if r.AppTag == "t" {
					t.Errorf("the allocator serves the refused tag: %+v", r)
				}
			}
		})
	}
}

// checkNotText fails tb unless err is ErrDescriptionNotText: bad input
// naming the description, in the words want, which never hold the value.
func checkNotText(tb testing.TB, call string, err error, want string) {
	tb.Helper()
	e, ok := errors.AsType[*errs.Error](err)
	if !ok {
		tb.Fatalf("%s error = %v, want an *errs.Error", call, err)
	}
	if e.Kind != errs.BadRequest || e.Field != "description" || e.Error() != want {
		tb.Errorf("%s: got %s %s %q, want invalid description %q", call, e.Kind, e.Field, e.Error(), want)
	}
	if !errors.Is(err, segment.ErrDescriptionNotText) || !errors.Is(err, segment.ErrInvalidDescription) {
		tb.Errorf("%s error %v is not ErrDescriptionNotText and ErrInvalidDescription", call, err)
	}
}

// TestTextFieldsNotUTF8 shows the other text fields of a new tag refuse
// bytes that are not UTF-8 by their own rules, each naming its field, and
// that the fields are checked in CheckNewTag's order, the description
// last.
func TestTextFieldsNotUTF8(t *testing.T) {
	tests := []struct {
		name   string
		tag    segment.NewTag
		wantIs error
	}{
		{"app_tag", segment.NewTag{AppTag: "ok\xc3", Step: 10}, segment.ErrInvalidTag},
		{"format", segment.NewTag{AppTag: "t", Step: 10, Format: "sequential\xc3"}, segment.ErrInvalidFormat},
		{"app_tag before description", segment.NewTag{AppTag: "\xff", Step: 10, Description: "\xff"}, segment.ErrInvalidTag},
		{"step before description", segment.NewTag{AppTag: "t", Description: "\xff"}, segment.ErrInvalidStep},
		{"format before description", segment.NewTag{AppTag: "t", Step: 10, Format: "random", Description: "\xff"}, segment.ErrInvalidFormat},
		{"length before description", segment.NewTag{AppTag: "t", Step: 10, Length: 6, Description: "\xff"}, segment.ErrInvalidLength},
		{"start before description", segment.NewTag{AppTag: "t", Step: 10, Start: new(int64(-1)), Description: "\xff"}, segment.ErrInvalidStart},
		{"length of description before its text", segment.NewTag{AppTag: "t", Step: 10, Description: strings.Repeat("\x00", segment.MaxDescription+1)},
			segment.ErrInvalidDescription},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := segment.CheckNewTag(tt.tag, 1000)
			if !errors.Is(err, tt.wantIs) || errors.Is(err, segment.ErrDescriptionNotText) {
				t.Errorf("CheckNewTag error = %v, want %v", err, tt.wantIs)
			}
		})
	}
}
