package server

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// timeLayout is RFC 3339 in UTC with exactly three fractional digits, as the
// contract writes every instant.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// handleAlloc serves GET /alloc?app_tag=T[&count=N], the hot path: no
// url.Values, no encoding/json, one pooled buffer, one Write. Every format's
// "id" is a JSON number (scrambled and fixed_length IDs have at most 18
// digits). A batch of a sequential or fixed_length tag is strictly
// increasing; a scrambled tag's batch is unique, in no order (docs/api.md §7).
// A dated tag's IDs come with their text, or as text only (dated.go).
func (s *Server) handleAlloc(w http.ResponseWriter, r *http.Request) int {
	raw := r.URL.RawQuery
	tag, err := tagParam(raw)
	if err != nil {
		return s.fail(w, r, err)
	}
	if err := s.allowTag(r, raw, tag); err != nil {
		return s.fail(w, r, err)
	}
	switch ranges, err := asRanges(raw); {
	case err != nil:
		return s.fail(w, r, err)
	case ranges:
		return s.allocRanges(w, r, tag)
	}
	n, err := countParam(raw, s.count)
	if err != nil {
		return s.fail(w, r, err)
	}
	if n == 0 {
		id, err := s.seg.Next(r.Context(), tag)
		if err != nil {
			if errors.Is(err, segment.ErrTextOnly) {
				return s.allocText(w, r, tag)
			}
			return s.fail(w, r, err)
		}
		bp := getBuf()
		b := append(*bp, okPrefix+`,"id":`...)
		b = strconv.AppendInt(b, id, 10)
		if f := s.seg.DatedFormat(tag); f != nil {
			b = appendIDStr(b, "id_str", id)
			b = appendPeriodEnd(b, f, numericStamp(f, id), s.seg.Now())
		}
		*bp = append(b, '}')
		return sendPooled(w, http.StatusOK, bp)
	}
	ip := s.idsPool.Get().(*[]int64)
	defer s.idsPool.Put(ip)
	ids := (*ip)[:n]
	if err := s.seg.NextN(r.Context(), tag, ids); err != nil {
		if errors.Is(err, segment.ErrTextOnly) {
			return s.allocTextN(w, r, tag, ids)
		}
		return s.fail(w, r, err)
	}
	bp := getBuf()
	f := s.seg.DatedFormat(tag)
	b := appendIDs(append(*bp, okPrefix...), ids, f != nil)
	if f != nil { // a batch is one period's
		b = appendPeriodEnd(b, f, numericStamp(f, ids[0]), s.seg.Now())
	}
	*bp = append(b, '}')
	return sendPooled(w, http.StatusOK, bp)
}

// tagJSON is one row of GET /tags: the store's row as of the last tag-list
// reload merged with this instance's view of it.
// A scrambled tag's key is never among them: the allocator's Tags() does
// not carry it.
type tagJSON struct {
	AppTag string `json:"app_tag"`
	Format string `json:"format"`
	Length int    `json:"length"`
	// Start is the tag's first ID, null when the store does not know it
	// (a row from before the start column).
	Start       *int64 `json:"start"`
	MaxID       int64  `json:"max_id"`
	Step        int64  `json:"step"`
	CurrentStep int64  `json:"current_step"`
	Left        int64  `json:"left"`
	UpdateTime  string `json:"update_time"`
	Description string `json:"description"`
	GivenBack   int64  `json:"given_back"`
	Wasted      int64  `json:"wasted"`
	// A dated tag's settings and current period; nil, no field, for
	// another format.
	*datedListing
}

// handleListTags serves GET /tags: a page of the allocator's last
// tag-list reload (every segment.tag_refresh; paging.go), so a flood of it
// costs the store nothing and each request what its page holds. Without
// parameters it is the first 1,000 tags by name, with "next" naming the
// last when more follow: a client of the time it listed every tag reads
// page one as it read the list.
func (s *Server) handleListTags(w http.ResponseWriter, r *http.Request) int {
	q, err := s.readPageQuery(r.URL.RawQuery, tagsLimits)
	if err != nil {
		return s.fail(w, r, err)
	}
	p := s.seg.TagPage(q)
	out := make([]tagJSON, len(p.Tags))
	for i := range p.Tags {
		snap, _ := s.seg.Snapshot(p.Tags[i].AppTag) // zeros for a tag not served here yet
		out[i] = s.tagListing(p.Tags[i], snap.TagStats)
	}
	var next *string
	if p.Next != "" {
		next = &p.Next
	}
	return s.sendJSON(w, r, http.StatusOK, struct {
		envelope
		Tags  []tagJSON `json:"tags"`
		Total int       `json:"total"`
		Next  *string   `json:"next"`
	}{success, out, p.Total, next})
}

// tagListing is row t with this instance's figures st, as GET /tags
// shows it.
func (s *Server) tagListing(t segment.Tag, st segment.TagStats) tagJSON {
	var start *int64
	if t.Start != 0 {
		start = &t.Start
	}
	return tagJSON{
		AppTag:       t.AppTag,
		Format:       string(cmp.Or(t.Format, segment.FormatSequential)),
		Length:       t.Length,
		Start:        start,
		MaxID:        t.MaxID,
		Step:         t.Step,
		CurrentStep:  st.Step,
		Left:         st.Buffered,
		UpdateTime:   formatTime(t.UpdateTime),
		Description:  t.Description,
		GivenBack:    st.GivenBack,
		Wasted:       st.Wasted,
		datedListing: s.datedListingOf(t, st.Period),
	}
}

// handleCreateTag serves POST /tags (admin): one tag as a JSON object,
// or many as an array of them (tags_bulk.go).
func (s *Server) handleCreateTag(w http.ResponseWriter, r *http.Request) int {
	data, err := readBody(w, r, maxBulkBodyBytes)
	if err != nil {
		return s.fail(w, r, err)
	}
	if isArray(data) {
		return s.createTags(w, r, data)
	}
	if len(data) > maxBodyBytes {
		return s.fail(w, r, errBodyTooLarge(maxBodyBytes))
	}
	nt, err := newTagOf(data)
	if err != nil {
		return s.fail(w, r, err)
	}
	// t is the tag as stored: the domain's defaults applied (the format,
	// a fixed_length start raised to its first ID).
	t, err := s.seg.CreateTag(r.Context(), nt)
	if err != nil {
		return s.fail(w, r, err)
	}
	s.logCreated(t)
	c := t.Record(s.seg.DatedFormat(t.AppTag))
	s.record(r, access.ActionTagCreate, t.AppTag, c)
	return s.sendJSON(w, r, http.StatusCreated, struct {
		envelope
		segment.TagRecord
	}{success, c})
}

func (s *Server) logCreated(t segment.Tag) {
	s.log.Info("tag created", "app_tag", t.AppTag, "step", t.Step, "start", t.Start,
		"format", string(t.Format), "length", t.Length, "format_spec", t.FormatSpec)
}

// newTagOf reads a tag of POST /tags, the body or an entry of its array:
// app_tag is required, and step too but for format dated, whose step has
// a default (docs/api.md §11); start, description, format, length and dated's
// period, time_zone, prefix and separator are optional, and what is not
// sent is left "not given" for the allocator's defaults. Only the JSON is
// checked here; the tag's rules and their words are the allocator's
// (segment.CheckNewTag).
func newTagOf(data []byte) (segment.NewTag, error) {
	o, err := parseObject(data, "app_tag", "step", "start", "description", "format", "length",
		"period", "time_zone", "prefix", "separator")
	if err != nil {
		return segment.NewTag{}, err
	}
	tag, ok, err := o.string("app_tag")
	switch {
	case err != nil:
		return segment.NewTag{}, err
	case !ok:
		return segment.NewTag{}, errMissingTag
	}
	step, ok, err := o.int64("step")
	switch {
	case err != nil:
		return segment.NewTag{}, err
	case !ok && !datedFormat(o):
		return segment.NewTag{}, missingParam("step")
	}
	var start *int64
	switch v, ok, err := o.int64("start"); {
	case err != nil:
		return segment.NewTag{}, err
	case ok:
		start = &v
	}
	desc, _, err := o.string("description")
	if err != nil {
		return segment.NewTag{}, err
	}
	if !jsonText(o["description"]) {
		// Decoded, it would pass as text with U+FFFD in it.
		return segment.NewTag{}, segment.ErrDescriptionNotText
	}
	format, _, err := o.string("format")
	if err != nil {
		return segment.NewTag{}, err
	}
	length, _, err := o.int64("length")
	if err != nil {
		return segment.NewTag{}, err
	}
	var set [4]string // period, time_zone, prefix, separator
	for i, field := range [...]string{"period", "time_zone", "prefix", "separator"} {
		if set[i], _, err = o.string(field); err != nil {
			return segment.NewTag{}, err
		}
	}
	return segment.NewTag{AppTag: tag, Step: step, Start: start, Description: desc,
		Format: segment.Format(format), Length: length,
		Period: dated.Period(set[0]), TimeZone: set[1], Prefix: set[2], Separator: set[3]}, nil
}

// datedFormat reports whether o asks for format dated, whose step may be
// left out.
func datedFormat(o object) bool {
	format, _, err := o.string("format")
	return err == nil && segment.Format(format) == segment.FormatDated
}
