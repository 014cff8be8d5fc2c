package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
)

// listedFields are the fields of a row of GET /tags, in the order a PATCH
// naming one it cannot change is refused: the first of them the body
// has.
var listedFields = []string{"app_tag", "format", "length", "start", "max_id", "period", "time_zone", "prefix",
	"separator", "current_step", "left", "update_time", "given_back", "wasted", "current_period"}

// patchFields are the fields PATCH /tags/{app_tag} reads: the two it
// changes, and every other one GET /tags shows, to refuse by name.
var patchFields = append([]string{"step", "description"}, listedFields...)

// handleUpdateTag serves PATCH /tags/{app_tag} (admin, docs/api.md §12): it
// changes the tag's step or description, or both, what never changes its
// numbers, and answers the tag as GET /tags shows it. The rules and their
// words are the allocator's (segment.Allocator.UpdateTag); this reads the
// body and names what it cannot change.
func (s *Server) handleUpdateTag(w http.ResponseWriter, r *http.Request) int {
	// Before the body: the path is the request's first word. The raw
	// segment, which a percent-encoded path keeps escaped, is refused
	// unless it is a tag as it stands.
	tag := chi.URLParam(r, "app_tag")
	if !segment.ValidTag(tag) {
		return s.fail(w, r, segment.ErrInvalidTag)
	}
	c, err := readTagChange(w, r)
	if err != nil {
		return s.fail(w, r, err)
	}
	t, err := s.seg.UpdateTag(r.Context(), tag, c)
	if err != nil {
		return s.fail(w, r, err)
	}
	s.record(r, access.ActionTagUpdate, t.AppTag, struct {
		Step        *int64  `json:"step,omitempty"`
		Description *string `json:"description,omitempty"`
	}{c.Step, c.Description})
	s.log.Info("tag updated", "app_tag", t.AppTag, "step", t.Step, "step_changed", c.Step != nil,
		"description_changed", c.Description != nil)
	snap, _ := s.seg.Snapshot(t.AppTag) // zeros for a tag not served here yet
	return s.sendJSON(w, r, http.StatusOK, struct {
		envelope
		tagJSON
	}{success, s.tagListing(t, snap.TagStats)})
}

// readTagChange reads PATCH /tags/{app_tag}'s body: step, description, or
// both. A field GET /tags shows that never changes is refused by name
// with the domain's reason (segment.UnchangeableField); one of this
// instance's figures is not a setting at all; any other field is unknown.
// A body with neither field is the domain's to refuse (ErrNoChange).
func readTagChange(w http.ResponseWriter, r *http.Request) (segment.TagChange, error) {
	o, err := readObject(w, r, patchFields...)
	if err != nil {
		return segment.TagChange{}, err
	}
	for _, f := range listedFields {
		if _, ok := o[f]; !ok {
			continue
		}
		if err := segment.UnchangeableField(f); err != nil {
			return segment.TagChange{}, err
		}
		return segment.TagChange{}, badParam(f, "a figure of the tag's use on an instance, which GET /tags shows, "+
			"not a setting: PATCH changes step and description only")
	}
	var c segment.TagChange
	switch v, ok, err := o.int64("step"); {
	case err != nil:
		return c, err
	case ok:
		c.Step = &v
	}
	switch v, ok, err := o.string("description"); {
	case err != nil:
		return c, err
	case !jsonText(o["description"]):
		// Decoded, it would pass as text with U+FFFD in it.
		return c, segment.ErrDescriptionNotText
	case ok:
		c.Description = &v
	}
	return c, nil
}
