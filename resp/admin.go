package resp

import (
	"crypto/subtle"
	"strconv"
	"strings"

	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// authorize is nil when the connection may make an admin call (docs/api.md §2):
// with an admin token, once it has sent AUTH with it; without one, when it
// comes from loopback.
//
// A browser cannot speak RESP, but a web page can make it send an HTTP
// request to this port (a cross-protocol form post) whose body is read as
// inline commands, from loopback when the page is open on this host. Such
// connections are closed at their first line (POST, a Host: header, or an
// HTTP request line: commands.go), before any command in the body is
// served, as Redis does.
func (s *Server) authorize(ses *session) error {
	switch {
	case s.admin != "" && ses.admin:
		return nil
	case s.admin != "":
		return errNoAuth
	case ses.loopback:
		return nil
	}
	return errLoopbackOnly
}

// auth serves AUTH [user] token: admin rights on this connection when
// token is admin_token (Redis's requirepass habit), or the right to take
// IDs of a per-tag token's tags when it is one (docs/api.md §12). The user
// name, which Redis 6 clients send as "default", is not checked.
func (s *Server) auth(c redcon.Conn, ses *session, args [][]byte) error {
	var token []byte
	switch len(args) {
	case 2:
		token = args[1]
	case 3:
		token = args[2]
	default:
		return arity(cmdAuth, args)
	}
	if err := s.checkToken(ses, token); err != nil {
		return err
	}
	c.WriteString("OK")
	return nil
}

// checkToken grants ses admin rights when token is the admin token
// (compared in constant time, which leaks only the length), or keeps it
// as the connection's per-tag token when the guard knows it: its tags are
// checked at each ID command. A token that is neither is refused with
// errWrongToken, one answer for both, so that a client cannot tell a
// wrong admin token from a wrong tag token; a failed AUTH leaves what an
// earlier one granted, as Redis does.
func (s *Server) checkToken(ses *session, token []byte) error {
	if s.admin != "" && subtle.ConstantTimeCompare(token, s.adminBytes) == 1 {
		ses.admin = true
		return nil
	}
	switch {
	case s.guard != nil:
		if s.guard.AllowAny(string(token)) != nil {
			return errWrongToken
		}
		ses.token = string(token)
		return nil
	case s.admin == "":
		return errNoToken
	}
	return errWrongToken
}

// allowTag is nil when ses may take IDs of tag ("" for SNOWFLAKE, which
// names none: any valid token), else the guard's refusal: with alloc_auth
// on, the token AUTH gave must be allowed tag now. Every ID command calls
// it before anything is taken, so a refused command costs no ID.
func (s *Server) allowTag(ses *session, tag string) error {
	if !s.allocAuth {
		return nil
	}
	if tag == "" {
		return s.guard.AllowAny(ses.token)
	}
	return s.guard.Allow(ses.token, tag)
}

// allowTagInfo is nil when ses may read what this instance knows of tag
// (INFO tag, HGETALL), else why not (docs/api.md §15): with alloc_auth on, a
// token AUTH gave that is allowed tag, or admin rights (authorize). The
// tag is not looked up first, so an unknown tag is refused exactly as a
// forbidden one.
func (s *Server) allowTagInfo(ses *session, tag string) error {
	if !s.allocAuth || s.authorize(ses) == nil {
		return nil
	}
	return s.guard.Allow(ses.token, tag)
}

// caller is who made an admin change on ses, for the audit log: how it
// was let in (AUTH with the admin token, or a loopback connection without
// one) and its address.
func (ses *session) caller() string {
	if ses.admin {
		return "admin-token " + ses.remote
	}
	return "loopback " + ses.remote
}

// hset serves HSET tag field value [field value …]: creates the tag
// (admin). It answers the number of fields set, as Redis's HSET does.
func (s *Server) hset(c redcon.Conn, ses *session, args [][]byte) error {
	if err := s.authorize(ses); err != nil {
		return err
	}
	if len(args) < 4 || len(args)%2 != 0 {
		return arity(cmdHset, args)
	}
	nt, err := readTag(args[1], args[2:])
	if err != nil {
		return err
	}
	// Log the tag as stored, the domain's defaults applied, as HTTP does.
	t, err := s.seg.CreateTag(s.ctx, nt)
	if err != nil {
		return err
	}
	s.log.Info("tag created", "app_tag", t.AppTag, "step", t.Step, "start", t.Start,
		"format", string(t.Format), "length", t.Length, "format_spec", t.FormatSpec, "via", "resp", "remote", ses.remote)
	s.record(ses, t)
	c.WriteInt(len(args[2:]) / 2)
	return nil
}

// record writes the creation of t through ses to the audit log; the tag
// is created already, so a failure is logged, not answered
// (access.Admin.Note). Its detail is the tag as POST /tags answers it, so
// that the log reads alike whichever front end made a tag.
func (s *Server) record(ses *session, t segment.Tag) {
	if s.audit == nil {
		return
	}
	s.audit.Note(s.ctx, s.log.With("via", "resp", "remote", ses.remote),
		access.Change{Caller: ses.caller(), Action: access.ActionTagCreate, Subject: t.AppTag, Detail: t.Record(nil)})
}

// The fields HSET takes; a bit each, to refuse one given twice.
const (
	fieldStep = 1 << iota
	fieldStart
	fieldDescription
	fieldFormat
	fieldLength
	fieldType
	fieldAutoDisk
	fieldPeriod
	fieldTimeZone
	fieldPrefix
	fieldSeparator
)

// hsetFields names the fields for the refusal of another.
const hsetFields = "HSET takes step, start, description, format, length, format dated's period, time_zone, prefix and separator, " +
	"and number-dispenser's type, starting and auto_disk"

// typeFormats are number-dispenser's types as idalloc's formats.
var typeFormats = map[string]segment.Format{
	"1": segment.FormatScrambled,
	"2": segment.FormatFixedLength,
	"3": segment.FormatSequential,
}

var (
	errBadType      = ownError(classErr, "invalid type: must be 1 (scrambled), 2 (fixed_length) or 3 (sequential)")
	errTypeVsFormat = ownError(classErr, "invalid type: it names another format than the format field")
)

// readTag reads HSET's field-value pairs into a new tag. Only the wire is
// checked here: each field known and given once, numbers that are
// integers. The rules of a tag and their words are the allocator's
// (segment.CheckNewTag), as for POST /tags: a dated setting (period,
// time_zone, prefix, separator) is handed over as sent, and refused there
// for a tag of another format or a value out of range. Field names match
// in any case, as number-dispenser's do; values are taken as sent (a
// time zone's name is case-sensitive). A dated tag without step gets the
// domain's default, others DefaultStep.
func readTag(tag []byte, pairs [][]byte) (segment.NewTag, error) {
	t := segment.NewTag{AppTag: string(tag), Step: DefaultStep}
	var seen int
	var typeFormat segment.Format
	for i := 0; i+1 < len(pairs); i += 2 {
		name, value := strings.ToLower(string(pairs[i])), pairs[i+1]
		var bit int
		var err error
		switch name {
		case "step":
			bit = fieldStep
			t.Step, err = integer("step", value)
		case "start", "starting":
			bit = fieldStart
			var n int64
			if n, err = integer(name, value); err == nil {
				t.Start = &n
			}
		case "description":
			bit = fieldDescription
			t.Description = string(value)
		case "format":
			bit = fieldFormat
			t.Format = segment.Format(value)
		case "length":
			bit = fieldLength
			t.Length, err = integer("length", value)
		case "type":
			bit = fieldType
			f, ok := typeFormats[string(value)]
			if !ok {
				err = errBadType
			}
			typeFormat = f
		case "period":
			bit = fieldPeriod
			t.Period = dated.Period(value)
		case "time_zone":
			bit = fieldTimeZone
			t.TimeZone = string(value)
		case "prefix":
			bit = fieldPrefix
			t.Prefix = string(value)
		case "separator":
			bit = fieldSeparator
			t.Separator = string(value)
		case "auto_disk", "auto-disk":
			// number-dispenser's persistence strategy: accepted and
			// ignored, since every one of idalloc's is safe (no ID is
			// served before the store has recorded it as taken).
			bit = fieldAutoDisk
		default:
			return t, unknownField(name)
		}
		if err != nil {
			return t, err
		}
		if seen&bit != 0 {
			return t, ownError(classErr, "field "+strconv.Quote(name)+" given twice: send each field once")
		}
		seen |= bit
	}
	if typeFormat != "" {
		if t.Format != "" && t.Format != typeFormat {
			return t, errTypeVsFormat
		}
		t.Format = typeFormat
	}
	if seen&fieldStep == 0 && t.Format == segment.FormatDated {
		t.Step = 0 // the domain's default for dated tags (docs/api.md §11)
	}
	return t, nil
}

// integer reads a field's integer value as a JSON body's would be read:
// decimal digits without a leading zero, after a '-' if negative (the
// allocator then refuses it in its own words, as over HTTP). A '+', a
// leading zero or another base ("+5", "007", "0x10") is refused, as HTTP
// refuses it, rather than read as the number a reader of the command
// might not see.
func integer(field string, b []byte) (int64, error) {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	canonical := len(digits) > 0 && '1' <= digits[0] && digits[0] <= '9' || string(b) == "0"
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || !canonical {
		return 0, ownError(classErr, "invalid "+field+": want an integer, in decimal digits without '+' or leading zeros")
	}
	return v, nil
}

// unknownField names a field HSET does not take, when its name is safe to
// quote back (the characters of a tag); otherwise it says so unnamed.
func unknownField(name string) error {
	if segment.ValidTag(name) {
		return ownError(classErr, "unknown field "+strconv.Quote(name)+": "+hsetFields)
	}
	return ownError(classErr, "unknown field: "+hsetFields)
}
