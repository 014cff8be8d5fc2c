package server

import (
	"strconv"

	"github.com/idalloc/idalloc/segment"
)

// GET /tags and GET /status list a page of the tags (docs/api.md §13):
// ?prefix= keeps the tags that start with it, ?after= starts after the
// tag the previous page ended with (its "next"), ?limit= bounds the page
// and ?sort=busiest ranks the tags by the IDs they issued lately instead
// of by name. The allocator cuts the page (segment.Allocator.TagPage);
// the metrics rank busiest first (metrics.Observer.Rank). This file reads
// the parameters.

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
// the client asked for. Busiest first ranks by s.obs.
func (s *Server) readPageQuery(raw string, lim pageLimits) (segment.PageQuery, error) {
	q := segment.PageQuery{Limit: lim.def}
	var err error
	if q.Prefix, _, err = queryParam(raw, "prefix"); err != nil {
		return q, err
	}
	if q.Prefix != "" && !segment.ValidTag(q.Prefix) { // a tag's start is a tag's spelling
		return q, errPrefix
	}
	if q.After, _, err = queryParam(raw, "after"); err != nil {
		return q, err
	}
	if q.After != "" && !segment.ValidTag(q.After) {
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
		q.Limit = n
	}
	switch v, _, err := queryParam(raw, "sort"); {
	case err != nil:
		return q, err
	case v == "busiest":
		q.Rank = s.obs
	case v != "" && v != "name":
		return q, errSort
	}
	return q, nil
}

// appendPageFields appends `,"total":N,"next":"tag"` (or null) for p.
func appendPageFields(b []byte, p *segment.Page) []byte {
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(p.Total), 10)
	b = append(b, `,"next":`...)
	if p.Next == "" {
		return append(b, "null"...)
	}
	return appendString(b, p.Next)
}
