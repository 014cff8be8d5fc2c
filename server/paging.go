package server

import (
	"strconv"
	"strings"

	"github.com/idalloc/idalloc/segment"
)

// GET /tags and GET /status list a page of the tags (docs/api.md §13):
// ?prefix= keeps the tags that start with it, ?after= starts after the
// tag the previous page ended with (its "next"), ?limit= bounds the page
// and ?sort=busiest ranks the tags by the IDs they issued lately instead
// of by name. They page over the allocator's sorted tag list by binary
// search, so a page by name costs what it holds whatever the tag count;
// busiest first is a bounded selection over the tags the prefix keeps
// (busy.go).

// pageQuery is a listing's parameters.
type pageQuery struct {
	prefix, after string
	limit         int
	busiest       bool
}

// pageLimits are a listing's default and largest limit.
type pageLimits struct{ def, max int }

// Each listing's limits. GET /tags answered every tag before it paged, so
// its default page is large: a client of that time reads every tag of
// most instances in one page, and sees "next" when there are more.
// /status is polled every second by the monitor page, whose objects are
// larger.
var (
	tagsLimits   = pageLimits{def: 1000, max: 10_000}
	statusLimits = pageLimits{def: 100, max: 1000}
)

var (
	errPrefix = badParam("prefix", "at most 64 of A-Z a-z 0-9 _ . : -, the start of a tag")
	errAfter  = badParam("after", "an app_tag: the previous page's next")
	errSort   = badParam("sort", `"name" (the default) or "busiest"`)
)

func (l pageLimits) errLimit() error {
	return badParam("limit", "from 1 to "+strconv.Itoa(l.max)+" in decimal digits alone (default "+strconv.Itoa(l.def)+")")
}

// readPageQuery reads a listing's parameters from a raw query. Each may be
// absent; given, it must be well formed, or the request is refused naming
// it: a cursor or filter read wrongly would page through other tags than
// the client asked for.
func readPageQuery(raw string, lim pageLimits) (pageQuery, error) {
	q := pageQuery{limit: lim.def}
	var err error
	if q.prefix, _, err = queryParam(raw, "prefix"); err != nil {
		return q, err
	}
	if q.prefix != "" && !segment.ValidTag(q.prefix) { // a tag's start is a tag's spelling
		return q, errPrefix
	}
	if q.after, _, err = queryParam(raw, "after"); err != nil {
		return q, err
	}
	if q.after != "" && !segment.ValidTag(q.after) {
		return q, errAfter
	}
	switch v, found, err := queryParam(raw, "limit"); {
	case err != nil:
		return q, err
	case found:
		n, err := strconv.Atoi(v)
		if err != nil || spelledOddly(v) || n < 1 || n > lim.max {
			return q, lim.errLimit()
		}
		q.limit = n
	}
	switch v, _, err := queryParam(raw, "sort"); {
	case err != nil:
		return q, err
	case v == "busiest":
		q.busiest = true
	case v != "" && v != "name":
		return q, errSort
	}
	return q, nil
}

// page is one page of a listing.
type page struct {
	// rows are the page's tags, in the listing's order.
	rows []segment.Tag
	// total counts the tags the prefix keeps, on every page.
	total int
	// next is the last tag of the page when more follow it, else "".
	next string
}

// pageOf cuts q's page from the sorted tag list.
func (s *Server) pageOf(q pageQuery) page {
	rows := s.seg.Tags()
	lo, hi := prefixRange(rows, q.prefix)
	if q.busiest {
		return s.act.busiest(rows[lo:hi], q.after, q.limit)
	}
	p := page{total: hi - lo}
	start := lo
	if q.after != "" {
		start = max(start, searchTags(rows, q.after, false))
	}
	end := hi
	if start+q.limit < hi {
		end = start + q.limit
		p.next = rows[end-1].AppTag
	}
	p.rows = rows[min(start, end):end]
	return p
}

// prefixRange returns where the tags that start with prefix are in rows,
// which are sorted: they are together, from the first at or above prefix
// to the first after it that does not start with it.
func prefixRange(rows []segment.Tag, prefix string) (lo, hi int) {
	lo = searchTags(rows, prefix, true)
	if prefix == "" {
		return lo, len(rows)
	}
	n := len(rows) - lo
	i, j := 0, n
	for i < j { // the first of rows[lo:] past the prefix's tags
		h := int(uint(i+j) >> 1)
		if strings.HasPrefix(rows[lo+h].AppTag, prefix) {
			i = h + 1
		} else {
			j = h
		}
	}
	return lo, lo + i
}

// searchTags returns the index of the first row whose tag is at or above
// tag (orEqual) or above it (!orEqual).
func searchTags(rows []segment.Tag, tag string, orEqual bool) int {
	i, j := 0, len(rows)
	for i < j {
		h := int(uint(i+j) >> 1)
		c := strings.Compare(rows[h].AppTag, tag)
		if c < 0 || (c == 0 && !orEqual) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// appendPageFields appends `,"total":N,"next":"tag"` (or null) for p.
func appendPageFields(b []byte, p *page) []byte {
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(p.total), 10)
	b = append(b, `,"next":`...)
	if p.next == "" {
		return append(b, "null"...)
	}
	return appendString(b, p.next)
}
