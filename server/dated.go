package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// Dated tags (docs/api.md §11) over HTTP. A dated tag without prefix and
// separator has numbers, which /alloc answers as every tag's ("id", "ids")
// and as text beside them ("id_str", "ids_str"): they have up to 18
// digits, past JavaScript's 2^53. With a prefix or a separator its IDs are
// text, answered as "id_str" and "ids_str" only. Every other tag's answer
// is as it was: the allocator tells a dated tag (DatedFormat) without a
// store query or an allocation, from one atomic load while no dated tag
// exists.
//
//	GET /alloc?app_tag=num           {"resp_code":0,"msg":"success","id":20261126000123,"id_str":"20261126000123","period_ends_in_ms":32400000}
//	GET /alloc?app_tag=num&count=2   {…,"id":20261126000124,"id_str":"20261126000124","ids":[…,…],"ids_str":["…","…"],"period_ends_in_ms":…}
//	GET /alloc?app_tag=ord           {"resp_code":0,"msg":"success","id_str":"ORD-20261126-000123","period_ends_in_ms":3600000}
//	GET /alloc?app_tag=ord&count=2   {…,"id_str":"ORD-20261126-000124","period_ends_in_ms":…,"ids_str":["ORD-20261126-000124","ORD-20261126-000125"]}
//
// period_ends_in_ms says how long, by this instance's clock, until the
// IDs' period ends (appendPeriodEnd): the Go client serves them no longer.
//
// A period whose numbers are spent is resp_code 10, kind period_exhausted,
// HTTP 409 as docs/api.md §2's table has resp_code 10, with Retry-After until
// the next period begins (errors.go). An instance whose clock is off the
// store's refuses dated tags with kind unavailable: 503, resp_code 3,
// Retry-After 1, the allocator checking the clocks again every second.

// appendPeriodEnd appends `,"period_ends_in_ms":N`: how long, by this
// instance's clock, until the period of the stamp its IDs carry ends. The
// Go client serves buffered IDs only that long, measured on its own
// monotonic clock from before it asked, so no ID is served after its
// period ended, whatever the client's wall clock says. From the IDs' stamp,
// not from now: a boundary may have passed since they were issued. A stamp
// that names no period (never, from the allocator) gets 0.
func appendPeriodEnd(b []byte, f *dated.Format, stamp int64, now time.Time) []byte {
	var ms int64
	if k, err := f.KeyOfStamp(stamp); err == nil {
		ms = max(k.End.Sub(now).Milliseconds(), 0)
	}
	b = append(b, `,"period_ends_in_ms":`...)
	return strconv.AppendInt(b, ms, 10)
}

// textStamp reads the stamp of a dated text ID: its digits after the
// prefix and separator.
func textStamp(f *dated.Format, id []byte) int64 {
	from := 0
	if f.Prefix() != "" { // "prefix sep stamp sep seq"; without a prefix, "stamp sep seq"
		from = len(f.Prefix()) + len(f.Separator())
	}
	var stamp int64
	for _, c := range id[from:min(from+f.Period().Digits(), len(id))] {
		stamp = stamp*10 + int64(c-'0')
	}
	return stamp
}

// numericStamp is the stamp of a numeric dated ID.
func numericStamp(f *dated.Format, id int64) int64 {
	stamp, _, _ := f.ParseID(id)
	return stamp
}

// appendIDStr appends `,"<name>":"<id>"`. Dated IDs are digits, letters
// and -_/. only (dated's rules), so they need no escaping.
func appendIDStr(b []byte, name string, id int64) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":"`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, '"')
}

// allocText answers GET /alloc for one ID of a tag whose IDs are text.
// It allocates nothing: the ID is written into the pooled body.
func (s *Server) allocText(w http.ResponseWriter, r *http.Request, tag string) int {
	bp := getBuf()
	b := append(*bp, okPrefix+`,"id_str":"`...)
	from := len(b)
	b, err := s.seg.AppendNextText(r.Context(), tag, b)
	*bp = b
	if err != nil {
		putBuf(bp)
		return s.fail(w, r, err)
	}
	b = append(b, '"')
	if f := s.seg.DatedFormat(tag); f != nil {
		b = appendPeriodEnd(b, f, textStamp(f, b[from:len(b)-1]), s.seg.Now())
	}
	*bp = append(b, '}')
	return sendPooled(w, http.StatusOK, bp)
}

// allocTextN answers GET /alloc&count for a tag whose IDs are text, with
// ids as the batch's room: "id_str" the first, "ids_str" all of them,
// one period's.
func (s *Server) allocTextN(w http.ResponseWriter, r *http.Request, tag string, ids []int64) int {
	batch, err := s.seg.NextTextN(r.Context(), tag, ids)
	if err != nil {
		return s.fail(w, r, err)
	}
	bp := getBuf()
	b := append(*bp, okPrefix+`,"id_str":"`...)
	from := len(b)
	b = batch.AppendID(b, 0)
	first := b[from:]
	b = append(b, '"')
	if f := s.seg.DatedFormat(tag); f != nil {
		b = appendPeriodEnd(b, f, textStamp(f, first), s.seg.Now())
	}
	b = append(b, `,"ids_str":[`...)
	for i := range batch.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = batch.AppendID(b, i)
		b = append(b, '"')
	}
	*bp = append(b, "]}"...)
	return sendPooled(w, http.StatusOK, bp)
}

// datedListing is what GET /tags adds for a dated tag: its settings and
// its current period as this instance serves it, null before its first
// ID here.
type datedListing struct {
	segment.DatedSettings
	CurrentPeriod *periodJSON `json:"current_period"`
}

// periodJSON is a dated tag's current period in GET /tags: its stamp, when
// it began and ends, the IDs this instance issued in it, and how many are
// left in it across instances as far as this one knows (PeriodStats). A
// period that ended with no ID asked since is shown until the next ID
// (ends_at says so).
type periodJSON struct {
	Stamp    int64  `json:"stamp"`
	StartsAt string `json:"starts_at"`
	EndsAt   string `json:"ends_at"`
	Issued   int64  `json:"issued"`
	Left     int64  `json:"left"`
}

// datedListingOf is GET /tags' dated fields of t, nil for another format.
func (s *Server) datedListingOf(t segment.Tag, p segment.PeriodStats) *datedListing {
	set := t.Settings(s.seg.DatedFormat(t.AppTag))
	if set == nil {
		return nil
	}
	l := &datedListing{DatedSettings: *set}
	if p.Stamp != 0 {
		l.CurrentPeriod = &periodJSON{Stamp: p.Stamp, StartsAt: formatTime(p.Start), EndsAt: formatTime(p.End),
			Issued: p.Issued, Left: p.Left}
	}
	return l
}

// appendDatedStatus appends a dated tag's fields to its object in GET
// /status: its settings, and "current_period" as GET /tags has it, its
// figures as strings like every count there, with "next_prefetched", the
// next period's first range fetched ahead of its start (0 when none is).
// Nothing for another tag, or a dated row this instance cannot serve.
func (s *Server) appendDatedStatus(b []byte, t *segment.TagSnapshot) []byte {
	if t.Format != segment.FormatDated {
		return b
	}
	f := s.seg.DatedFormat(t.AppTag)
	if f == nil {
		return b
	}
	b = append(b, `,"period":`...)
	b = appendString(b, string(f.Period()))
	b = append(b, `,"time_zone":`...)
	b = appendString(b, f.TimeZone())
	b = append(b, `,"prefix":`...)
	b = appendString(b, f.Prefix())
	b = append(b, `,"separator":`...)
	b = appendString(b, f.Separator())
	b = append(b, `,"current_period":`...)
	p := &t.Period
	if p.Stamp == 0 {
		return append(b, "null"...)
	}
	b = append(b, `{"stamp":"`...)
	b = strconv.AppendInt(b, p.Stamp, 10)
	b = append(b, `","starts_at":`...)
	b = appendTime(b, p.Start)
	b = append(b, `,"ends_at":`...)
	b = appendTime(b, p.End)
	b = appendIntField(b, "issued", p.Issued)
	b = appendIntField(b, "left", p.Left)
	b = appendIntField(b, "next_prefetched", p.NextPrefetched)
	return append(b, '}')
}
