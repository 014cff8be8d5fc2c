package segment

import "github.com/idalloc/idalloc/segment/dated"

// A dated tag (docs/api.md §11) is stored as a row of the segments table like
// every tag, with Format dated, Length the digits of its sequence part,
// Start the first sequence number of every period, and FormatSpec the rest
// of its settings (period, time zone, prefix, separator) as
// dated.Settings.Spec writes them. Its numbers are counted elsewhere: one
// counter per (tag, period stamp), kept by the store's PeriodStore; the
// row's max_id counts nothing.

// DefaultDatedStep is a dated tag's step when none is given (docs/api.md §11).
const DefaultDatedStep = 1000

var (
	// ErrDatedOnly: a dated setting (period, time_zone, prefix,
	// separator) given for a tag of another format. Each field has its
	// own error, a case of this one, naming it.
	ErrDatedOnly = invalid("format", "period, time_zone, prefix and separator are settings of format dated only", nil)

	errPeriodNotDated    = invalid("period", "is a setting of format dated only: leave it out, or send format dated", ErrDatedOnly)
	errTimeZoneNotDated  = invalid("time_zone", "is a setting of format dated only: leave it out, or send format dated", ErrDatedOnly)
	errPrefixNotDated    = invalid("prefix", "is a setting of format dated only: leave it out, or send format dated", ErrDatedOnly)
	errSeparatorNotDated = invalid("separator", "is a setting of format dated only: leave it out, or send format dated", ErrDatedOnly)

	// ErrDatedUnsupported: CreateTag of a dated tag on a store that keeps
	// no per-period counters (no PeriodStore). It is ErrFormatUnsupported.
	ErrDatedUnsupported = invalid("format", "this store cannot keep format dated: it has no per-period counters, "+
		"which dated tags count their numbers in; create dated tags on a store that has them", ErrFormatUnsupported)

	// ErrTextOnly: Next or NextN on a dated tag with a prefix or a
	// separator, whose IDs are text. Nothing is issued.
	ErrTextOnly = invalid("app_tag", "this tag's IDs are text, not numbers (a dated tag with a prefix or a separator): "+
		"ask for them as text (id_str; NextText in Go)", nil)

	// errSpecNotDated: a row of another format with a FormatSpec.
	errSpecNotDated = invalid("format_spec", "must be empty for a tag that is not dated", nil)
)

// checkFormatFields checks the format fields of n for t (format, the
// dated settings, length, start), in that order, and sets t's Format,
// Length, Start and FormatSpec to them with their defaults.
func checkFormatFields(t *Tag, n NewTag) error {
	switch t.Format {
	case FormatDated:
		return checkNewDated(t, n)
	case "", FormatSequential, FormatFixedLength, FormatScrambled:
		if err := datedFieldsAbsent(n); err != nil {
			return err
		}
	}
	return checkNewFormat(t, n.Start, n.Length)
}

// datedFieldsAbsent refuses a dated setting given for another format.
func datedFieldsAbsent(n NewTag) error {
	switch {
	case n.Period != "":
		return errPeriodNotDated
	case n.TimeZone != "":
		return errTimeZoneNotDated
	case n.Prefix != "":
		return errPrefixNotDated
	case n.Separator != "":
		return errSeparatorNotDated
	}
	return nil
}

// checkNewDated checks a dated tag's settings by dated's own rules and
// sets t's Length, Start and FormatSpec to them, defaults written out.
func checkNewDated(t *Tag, n NewTag) error {
	s, err := dated.Check(dated.Settings{Period: n.Period, TimeZone: n.TimeZone, Length: n.Length,
		Prefix: n.Prefix, Separator: n.Separator, Start: n.Start})
	if err != nil {
		return err
	}
	t.Length, t.Start, t.FormatSpec = int(s.Length), *s.Start, s.Spec()
	return nil
}

// DatedFormat returns the format dated row t is served in: its
// FormatSpec with its Length and Start. A Start of 0 (a store that does
// not know it) is refused, by dated.New: every period's numbers begin
// there, and a guess would serve another tag than the one its creator
// made. Errors: dated.ParseSpec's, an error naming length that is also
// dated.ErrInvalidLength (Length 0), and dated.New's.
func (t Tag) DatedFormat() (*dated.Format, error) {
	s, err := dated.ParseSpec(t.FormatSpec)
	if err != nil {
		return nil, err
	}
	start := t.Start
	s.Length, s.Start = int64(t.Length), &start
	if t.Length == 0 {
		return nil, invalid("length", "a dated row needs the digits of its sequence part", dated.ErrInvalidLength)
	}
	return dated.New(s)
}
