package dated

import "strings"

// A spec is how a store keeps a dated tag's settings beyond its sequence
// length and start, which are the tag's own length and start columns:
// period, time zone, prefix and separator as one line of text (the
// segment.Tag.FormatSpec a store keeps unread), such as
//
//	v1;period=day;time_zone=Asia/Shanghai;prefix=ORD;separator=-
//
// It is canonical, so equal settings are equal text (a store or a
// migration may compare them): the version first, every field in this
// order, each default written out. None of the values can hold ';' or
// '=' (New refuses them), so the text needs no escaping. The leading
// version lets a later idalloc add a field: this one refuses a spec of
// another version in words that say to upgrade, rather than serve the tag
// in another format than its creator asked for.

// specVersion is the version of the spec this package writes and reads.
const specVersion = "v1"

// specKeys are the spec's fields, in their order, named as docs/api.md §11
// names them.
var specKeys = [...]string{"period", "time_zone", "prefix", "separator"}

var (
	// ErrInvalidSpec: ParseSpec of text that is not a spec Spec writes.
	// Kind BadRequest, Field "format_spec": a store's row is at fault,
	// not a client's input.
	ErrInvalidSpec = invalid("format_spec", "is not a dated format's settings as idalloc writes them "+
		"("+specVersion+";period=…;time_zone=…;prefix=…;separator=…)", nil)
	errSpecVersion = invalid("format_spec", "was written by a newer version of idalloc (its settings version is not "+
		specVersion+"): upgrade this instance to serve the tag", ErrInvalidSpec)
)

// Spec returns s's period, time zone, prefix and separator as a store
// keeps them, with the defaults written out (Period "" is day, TimeZone ""
// is UTC); Length and Start are not in it. It does not check s: the spec
// of settings Check accepted is one ParseSpec reads back.
func (s Settings) Spec() string {
	p, zone := s.Period, s.TimeZone
	if p == "" {
		p = DefaultPeriod
	}
	if zone == "" {
		zone = DefaultTimeZone
	}
	var b strings.Builder
	b.Grow(len(specVersion) + 48 + len(zone) + len(s.Prefix))
	b.WriteString(specVersion)
	for i, v := range [...]string{string(p), zone, s.Prefix, s.Separator} {
		b.WriteByte(';')
		b.WriteString(specKeys[i])
		b.WriteByte('=')
		b.WriteString(v)
	}
	return b.String()
}

// Spec returns f's settings as a store keeps them: f.Settings().Spec().
func (f *Format) Spec() string { return f.Settings().Spec() }

// ParseSpec reads a spec Spec wrote and returns its settings, with Length
// 0 and Start nil: the caller sets them from the tag's own length and
// start and makes the Format with New. It is strict: it accepts only the
// text Spec writes of settings Check accepts, so ParseSpec(x) succeeds
// only when x is canonical.
//
// Errors: ErrInvalidSpec, or a case of it for a spec of another version;
// for a value New refuses (an unknown period or zone), New's error,
// naming the field.
func ParseSpec(spec string) (Settings, error) {
	version, rest, _ := strings.Cut(spec, ";")
	if version != specVersion {
		if len(version) > 1 && version[0] == 'v' && isDigits(version[1:]) {
			return Settings{}, errSpecVersion
		}
		return Settings{}, ErrInvalidSpec
	}
	var vals [len(specKeys)]string
	for i, key := range specKeys {
		var field string
		field, rest, _ = strings.Cut(rest, ";")
		v, ok := strings.CutPrefix(field, key+"=")
		if !ok {
			return Settings{}, ErrInvalidSpec
		}
		vals[i] = v
	}
	s := Settings{Period: Period(vals[0]), TimeZone: vals[1], Prefix: vals[2], Separator: vals[3]}
	// The values New accepts hold no ';', so a field left over or a value
	// with one in it makes the text differ from what Spec writes.
	if s.Spec() != spec || s.Period == "" || s.TimeZone == "" {
		return Settings{}, ErrInvalidSpec
	}
	if _, err := New(s); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
