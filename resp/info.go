package resp

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/segment"
)

// redisVersion is the Redis version INFO and HELLO claim, for clients that
// look at it to pick commands: 7.0 has every command they send while
// connecting. idalloc's own version is in idalloc_version.
const redisVersion = "7.0.0"

// infoSections are Redis's INFO section names. INFO with one of them
// answers server sections (those idalloc has; the others are empty, as
// Redis answers an unknown section), unless a tag has that name.
var infoSections = map[string]bool{
	"server": true, "clients": true, "memory": true, "persistence": true, "stats": true,
	"replication": true, "cpu": true, "modules": true, "keyspace": true, "errorstats": true,
	"cluster": true, "commandstats": true, "latencystats": true, "keysizes": true,
	"all": true, "default": true, "everything": true,
}

// info serves INFO [tag | section …]. Without an argument, or with Redis
// section names, it answers server sections, enough for clients' ready
// checks (ioredis waits for loading:0); with a tag, that tag's figures on
// this instance.
func (s *Server) info(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) == 2 && !s.isSectionNotTag(ses, args[1]) {
		return s.tagInfo(c, ses, ses.tag(args[1]))
	}
	want := map[string]bool{}
	for _, a := range args[1:] {
		name := strings.ToLower(string(a))
		if !infoSections[name] {
			return arity(cmdInfo, args) // a tag among sections
		}
		want[name] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	var b []byte
	for _, sec := range s.serverSections() {
		if all || want[strings.ToLower(sec.name)] {
			if len(b) > 0 {
				b = append(b, "\r\n"...)
			}
			b = append(b, "# "+sec.name+"\r\n"...)
			b = append(b, sec.body...)
		}
	}
	c.WriteBulk(b)
	return nil
}

// isSectionNotTag reports whether arg is a Redis section name that no tag
// of the last tag-list reload has, or none that ses may see: whether such
// a tag exists is not told to a connection that may not read it.
func (s *Server) isSectionNotTag(ses *session, arg []byte) bool {
	if !infoSections[strings.ToLower(string(arg))] {
		return false
	}
	if s.allowTagInfo(ses, string(arg)) != nil {
		return true
	}
	_, found := findTag(s.seg.Tags(), string(arg))
	return !found
}

func findTag(tags []segment.Tag, tag string) (int, bool) {
	return slices.BinarySearchFunc(tags, tag, func(t segment.Tag, name string) int { return strings.Compare(t.AppTag, name) })
}

type section struct{ name, body string }

// serverSections are INFO's answer without a tag, as Redis writes it:
// "# Section" headers, "key:value" lines, CRLF line ends.
func (s *Server) serverSections() []section {
	up := time.Since(s.started)
	lines := func(kv ...string) string {
		var b strings.Builder
		for i := 0; i+1 < len(kv); i += 2 {
			b.WriteString(kv[i] + ":" + kv[i+1] + "\r\n")
		}
		return b.String()
	}
	itoa := strconv.Itoa
	return []section{
		{"Server", lines(
			"redis_version", redisVersion,
			"redis_mode", "standalone",
			"idalloc_version", s.version,
			"process_id", itoa(os.Getpid()),
			"uptime_in_seconds", itoa(int(up/time.Second)),
			"uptime_in_days", itoa(int(up/(24*time.Hour))),
		)},
		{"Clients", lines(
			"connected_clients", itoa(s.openConns()),
			"maxclients", itoa(s.maxConns),
		)},
		{"Persistence", lines("loading", "0", "async_loading", "0")},
		{"Replication", lines("role", "master", "connected_slaves", "0")},
		{"Keyspace", ""},
	}
}

// tagInfo answers INFO tag: a "# Tag" section of the tag's settings and
// this instance's figures since it started, the numbers /metrics and GET
// /tags show:
//
//	name, format, length, start, step    the tag as created (start empty
//	                                     for a row made before the store
//	                                     recorded starts: it is unknown)
//	current_step                         the adaptive step now
//	buffered                             IDs in memory, current + next segment
//	issued, given_back, wasted           IDs handed out, returned to the
//	                                     store at a stop, lost (gaps)
//	waste_rate                           wasted / (issued + wasted), in %
//
// and a dated tag's lines after them (appendPeriodInfo). With alloc_auth
// on it needs a token allowed the tag, or admin rights.
func (s *Server) tagInfo(c redcon.Conn, ses *session, tag string) error {
	if err := s.allowTagInfo(ses, tag); err != nil {
		return err
	}
	// Buffered refuses an invalid or unknown tag in the domain's words,
	// as /health?app_tag= does.
	if _, err := s.seg.Buffered(tag); err != nil {
		return err
	}
	var row segment.Tag
	if tags := s.seg.Tags(); len(tags) > 0 {
		if i, ok := findTag(tags, tag); ok {
			row = tags[i]
		}
	}
	var st segment.TagStats
	for _, x := range s.seg.Stats() {
		if x.AppTag == tag {
			st = x
			break
		}
	}
	format := row.Format
	if format == "" {
		format = segment.FormatSequential
	}
	start := ""
	if row.Start > 0 {
		start = strconv.FormatInt(row.Start, 10)
	}
	rate := 0.0
	if st.Issued+st.Wasted > 0 {
		rate = 100 * float64(st.Wasted) / float64(st.Issued+st.Wasted)
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	// A section header, as every INFO answer has: go-redis's InfoMap
	// panics on lines before one; line parsers skip it.
	b := []byte("# Tag\r\n")
	for _, kv := range [...][2]string{
		{"name", tag},
		{"format", string(format)},
		{"length", strconv.Itoa(row.Length)},
		{"start", start},
		{"step", i64(row.Step)},
		{"current_step", i64(st.Step)},
		{"buffered", i64(st.Buffered)},
		{"issued", i64(st.Issued)},
		{"given_back", i64(st.GivenBack)},
		{"wasted", i64(st.Wasted)},
		{"waste_rate", strconv.FormatFloat(rate, 'f', 2, 64) + "%"},
	} {
		b = append(b, kv[0]...)
		b = append(b, ':')
		b = append(b, kv[1]...)
		b = append(b, "\r\n"...)
	}
	if format == segment.FormatDated {
		b = appendPeriodInfo(b, row, st.Period)
	}
	c.WriteBulk(b)
	return nil
}

// appendPeriodInfo appends a dated tag's lines to INFO tag (docs/api.md §11):
// its settings as created (period, time_zone, prefix, separator; length
// and start are the sequence part's), then its current period on this
// instance, empty before its first ID here:
//
//	current_period                       the period's stamp (20261126)
//	period_start, period_end             its stretch of time, RFC 3339 in
//	                                     the tag's zone; the next period
//	                                     begins at period_end
//	period_issued                        IDs of it this instance issued
//	period_left                          its numbers that may still be
//	                                     issued, as far as this instance
//	                                     knows (unreserved at its last
//	                                     fetch, plus its buffered ones)
//	next_period_buffered                 the next period's first range,
//	                                     fetched ahead of its start
func appendPeriodInfo(b []byte, row segment.Tag, p segment.PeriodStats) []byte {
	var set segment.DatedSettings
	if s := row.Settings(nil); s != nil {
		set = *s
	} // else a spec this build cannot read, which serves no ID either: lines left empty
	line := func(k, v string) {
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	line("period", string(set.Period))
	line("time_zone", set.TimeZone)
	line("prefix", set.Prefix)
	line("separator", set.Separator)
	if p.Stamp == 0 {
		for _, k := range [...]string{"current_period", "period_start", "period_end", "period_issued", "period_left", "next_period_buffered"} {
			line(k, "")
		}
		return b
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	line("current_period", i64(p.Stamp))
	line("period_start", p.Start.Format(time.RFC3339))
	line("period_end", p.End.Format(time.RFC3339))
	line("period_issued", i64(p.Issued))
	line("period_left", i64(p.Left))
	line("next_period_buffered", i64(p.NextPrefetched))
	return b
}
