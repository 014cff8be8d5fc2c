package segment_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// TestCheckNewTagWords pins each rule of a new tag to its Kind, field,
// message and sentinel: the words every front end sends.
func TestCheckNewTagWords(t *testing.T) {
	tests := []struct {
		name      string
		tag       segment.NewTag
		wantField string
		wantMsg   string
		wantIs    error
	}{
		{"invalid tag", segment.NewTag{AppTag: "a b", Step: 10}, "app_tag", "invalid app_tag: must match ^[A-Za-z0-9_.:-]{1,64}$", segment.ErrInvalidTag},
		{"empty tag", segment.NewTag{Step: 10}, "app_tag", "invalid app_tag: must match ^[A-Za-z0-9_.:-]{1,64}$", segment.ErrInvalidTag},
		{"step 0", segment.NewTag{AppTag: "t", Step: 0}, "step", "invalid step: must be from 1 to 1000", segment.ErrInvalidStep},
		{"step above cap", segment.NewTag{AppTag: "t", Step: 1001}, "step", "invalid step: must be from 1 to 1000", segment.ErrInvalidStep},
		{"negative start", segment.NewTag{AppTag: "t", Step: 10, Start: new(int64(-1))}, "start", "invalid start: must be from 1 to 9223372032559808511", segment.ErrInvalidStart},
		{"start above MaxUsableID", segment.NewTag{AppTag: "t", Step: 10, Start: new(int64(segment.MaxUsableID + 1))}, "start", "invalid start: must be from 1 to 9223372032559808511", segment.ErrInvalidStep},
		{"description of 257 characters", segment.NewTag{AppTag: "t", Step: 10, Description: strings.Repeat("é", 257)}, "description", "invalid description: longer than 256 characters", segment.ErrInvalidDescription},
		{"tag checked before step", segment.NewTag{AppTag: "a b", Step: 0}, "app_tag", "invalid app_tag: must match ^[A-Za-z0-9_.:-]{1,64}$", segment.ErrInvalidTag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := segment.CheckNewTag(tt.tag, 1000)
			e, ok := errors.AsType[*errs.Error](err)
			if !ok {
				t.Fatalf("CheckNewTag error = %v, want an *errs.Error", err)
			}
			if e.Kind != errs.BadRequest || e.Field != tt.wantField || e.Error() != tt.wantMsg {
				t.Errorf("got %s %s %q, want bad_request %s %q", e.Kind, e.Field, e.Error(), tt.wantField, tt.wantMsg)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
		})
	}
	got, err := segment.CheckNewTag(segment.NewTag{AppTag: "t", Step: 1000, Description: strings.Repeat("é", 256)}, 1000)
	if err != nil || got.Start != 1 {
		t.Errorf("valid tag: got %+v, %v; want Start 1 and no error", got, err)
	}
}

// TestCreateTagSameWordsAsCheck shows the Allocator refuses with
// CheckNewTag's words, its own MaxStep in them, before the store.
func TestCreateTagSameWordsAsCheck(t *testing.T) {
	st := newFakeStore()
	a := alloctest.New(t, st, segment.Config{MaxStep: 500})
	bad := segment.NewTag{AppTag: "t", Step: 501}
	_, want := segment.CheckNewTag(bad, 500)
	_, err := a.CreateTag(context.Background(), bad)
	if err == nil || err.Error() != want.Error() || !errors.Is(err, segment.ErrInvalidStep) {
		t.Errorf("CreateTag = %v, want %v (ErrInvalidStep)", err, want)
	}
}

// TestDescribe finds the domain error under any wrapping, its kind and
// field, and nothing in a fault, whose text is not for clients.
func TestDescribe(t *testing.T) {
	tests := []struct {
		err       error
		wantKind  errs.Kind
		wantField string
		wantMsg   string
		wantOK    bool
	}{
		{fmt.Errorf("fetch segment %q: %w", "t", segment.ErrUnknownTag), errs.UnknownTag, "app_tag", segment.ErrUnknownTag.Error(), true},
		{fmt.Errorf("%w: %w", segment.ErrUnavailable, errors.New("dial tcp: secret")), errs.Unavailable, "", segment.ErrUnavailable.Error(), true},
		{segment.ErrClosed, errs.Draining, "", "draining: retry on another instance", true},
		{segment.ErrTagExists, errs.Exists, "app_tag", "app_tag already exists", true},
		{segment.ErrExhausted, errs.Exhausted, "app_tag", "app_tag ID space exhausted", true},
		{fmt.Errorf("%w: got (5, 15]", segment.ErrRewound), "", "", "", false},
		{errors.New("dial tcp: secret"), "", "", "", false},
	}
	for _, tt := range tests {
		e, ok := errs.Describe(tt.err)
		if ok != tt.wantOK || ok && (e.Kind != tt.wantKind || e.Field != tt.wantField || e.Error() != tt.wantMsg) {
			t.Errorf("Describe(%v) = %+v, %v; want %q %q %q, %v", tt.err, e, ok, tt.wantKind, tt.wantField, tt.wantMsg, tt.wantOK)
		}
	}
}
