package resp

import (
	"cmp"
	"errors"
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/segment"
)

// MaxKeys is the most names KEYS answers (docs/api.md §6): the first that
// match, in byte order. More would be a reply of megabytes for one
// command, which a client reading it as Redis's whole keyspace would not
// expect either; a narrower pattern, or GET /tags, shows the rest.
const MaxKeys = 10_000

// keys serves KEYS pattern (admin): the names of the tags that match
// pattern, read as Redis reads it (glob.go), as of the last tag-list
// reload and the tags created here since, in byte order; at most MaxKeys
// of them. It asks no store. The pattern's literal start narrows the tags
// to page through (segment.Allocator.TagPage), and the pattern filters
// each page.
func (s *Server) keys(c redcon.Conn, ses *session, args [][]byte) error {
	if err := s.authorize(ses); err != nil {
		return err
	}
	if len(args) != 2 {
		return arity(cmdKeys, args)
	}
	g := compileGlob(args[1])
	q := segment.PageQuery{Prefix: g.prefix(), Limit: MaxKeys}
	var names []string
	for len(names) < MaxKeys {
		p := s.seg.TagPage(q)
		for _, t := range p.Tags {
			if g.match(t.AppTag) {
				if names = append(names, t.AppTag); len(names) == MaxKeys {
					break
				}
			}
		}
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	c.WriteArray(len(names))
	for _, n := range names {
		c.WriteBulkString(n)
	}
	return nil
}

// hgetall serves HGETALL tag: the tag's settings as HSET takes them, field
// and value by turns, so that what it answers creates the same tag under
// another name: step, start (when the store knows it), description,
// format, length, and a dated tag's period, time_zone, prefix and
// separator. Never a scrambled tag's key: the allocator's rows do not
// carry it. An unknown tag is an empty array, as Redis answers for a
// missing key; a name that cannot be a tag is refused in the domain's
// words, as every command refuses it. Like INFO tag it needs no admin
// rights: it shows a tag's settings, which its users know, and no figure
// of its use; with alloc_auth on, like INFO tag, a token allowed the tag
// (or admin rights), checked before the tag is looked up.
func (s *Server) hgetall(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) != 2 {
		return arity(cmdHgetall, args)
	}
	tag := ses.tag(args[1])
	if err := s.allowTagInfo(ses, tag); err != nil {
		return err
	}
	// Buffered finds a tag another instance made since the last reload
	// (with at most one reload a second for misses), as GET does.
	if _, err := s.seg.Buffered(tag); err != nil {
		if errors.Is(err, segment.ErrUnknownTag) {
			c.WriteArray(0)
			return nil
		}
		return err
	}
	tags := s.seg.Tags()
	i, found := findTag(tags, tag)
	if !found {
		// Served here, but gone from the store's list since (a row deleted
		// by hand): it has no settings to show.
		c.WriteArray(0)
		return nil
	}
	fields := settingsOf(tags[i])
	c.WriteArray(len(fields))
	for _, f := range fields {
		c.WriteBulkString(f)
	}
	return nil
}

// settingsOf is row t's settings as HSET's field-value pairs.
func settingsOf(t segment.Tag) []string {
	f := []string{"step", strconv.FormatInt(t.Step, 10)}
	if t.Start > 0 {
		f = append(f, "start", strconv.FormatInt(t.Start, 10))
	}
	format := cmp.Or(t.Format, segment.FormatSequential)
	f = append(f, "description", t.Description, "format", string(format), "length", strconv.Itoa(t.Length))
	if format != segment.FormatDated {
		return f
	}
	set := t.Settings(nil)
	if set == nil {
		// A spec this build cannot read serves no ID either; its settings
		// cannot be told.
		return f
	}
	return append(f, "period", string(set.Period), "time_zone", set.TimeZone, "prefix", set.Prefix,
		"separator", set.Separator)
}
