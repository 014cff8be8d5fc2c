package segment

import "strings"

// A page of the tag list (docs/api.md §13): the tags that start with a
// prefix, after a cursor (the previous page's Next), at most a limit of
// them, by name or in a Ranker's order. By name a page is cut from the
// sorted list by binary search, so it costs what it holds whatever the
// tag count; a Ranker orders the tags the prefix keeps.

// PageQuery says which page of the tag list to cut.
type PageQuery struct {
	// Prefix keeps the tags that start with it; "" keeps every tag.
	Prefix string
	// After starts the page after this tag, in the page's order: the
	// previous page's Next. "" starts at the first.
	After string
	// Limit is the most tags the page holds; below 1 it is 1.
	Limit int
	// Rank orders the tags instead of by name; nil means by name.
	Rank Ranker
}

// Ranker orders a listing some other way than by name (busiest first:
// the metrics package's Observer).
type Ranker interface {
	// Rank returns at most limit of rows (which are sorted by name and
	// must not be modified) in its order, starting after the row named
	// after ("" starts at the first), and whether more rows follow them.
	Rank(rows []Tag, after string, limit int) (page []Tag, more bool)
}

// Page is one page of the tag list.
type Page struct {
	// Tags are the page's rows, in its order. Cut by name, they are the
	// list's own: do not modify them.
	Tags []Tag
	// Total counts the tags the prefix keeps, on every page.
	Total int
	// Next is the last tag of the page when more follow it, else "".
	Next string
}

// TagPage cuts q's page from Tags' list, without asking the store.
func (a *Allocator) TagPage(q PageQuery) Page { return PageOf(a.Tags(), q) }

// PageOf cuts q's page from sorted, a list sorted by AppTag as Tags
// lists it.
func PageOf(sorted []Tag, q PageQuery) Page {
	limit := max(q.Limit, 1)
	lo, hi := prefixRange(sorted, q.Prefix)
	p := Page{Total: hi - lo}
	if q.Rank != nil {
		var more bool
		if p.Tags, more = q.Rank.Rank(sorted[lo:hi], q.After, limit); more {
			p.Next = p.Tags[len(p.Tags)-1].AppTag
		}
		return p
	}
	start := lo
	if q.After != "" {
		start = max(start, searchTags(sorted, q.After, false))
	}
	end := hi
	if start+limit < hi {
		end = start + limit
		p.Next = sorted[end-1].AppTag
	}
	p.Tags = sorted[min(start, end):end]
	return p
}

// prefixRange returns where the tags that start with prefix are in rows,
// which are sorted: they are together, from the first at or above prefix
// to the first after it that does not start with it.
func prefixRange(rows []Tag, prefix string) (lo, hi int) {
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
func searchTags(rows []Tag, tag string, orEqual bool) int {
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
