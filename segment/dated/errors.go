package dated

import (
	"errors"

	"github.com/idalloc/idalloc/errs"
)

// Every refusal of a client's input here is an *errs.Error of Kind
// BadRequest naming the JSON field at fault; the errors made for one call
// are cases of their field's sentinel, so errors.Is matches them. No
// message holds the value sent (package errs): the words say what is
// wrong with it and what a valid value is.

func invalid(field, reason string, sentinel error) *errs.Error {
	return errs.E(errs.BadRequest, field, reason, sentinel)
}

// Sentinel errors; callers match them with errors.Is.
var (
	// ErrInvalidPeriod: a period other than year, month, day, hour and
	// minute.
	ErrInvalidPeriod = invalid("period", "must be year, month, day, hour or minute", nil)
	// ErrInvalidTimeZone: a time_zone that is not an IANA time zone name
	// this instance knows, or "Local".
	ErrInvalidTimeZone = invalid("time_zone", "unknown time zone: use an IANA name such as UTC, Europe/Berlin or Asia/Shanghai "+
		"(the names are case-sensitive)", nil)
	// ErrInvalidLength: a length below 1, or one that makes stamp +
	// sequence longer than 18 digits. New's error names the period's
	// range.
	ErrInvalidLength = invalid("length", "must be from 1 to 18 minus the stamp's digits "+
		"(14 for year, 12 for month, 10 for day, 8 for hour, 6 for minute)", nil)
	// ErrInvalidPrefix: a prefix that is not up to 12 letters or digits.
	ErrInvalidPrefix = invalid("prefix", "must be up to 12 letters or digits (A-Z, a-z, 0-9)", nil)
	// ErrInvalidSeparator: a separator other than -, _, /, . and none.
	ErrInvalidSeparator = invalid("separator", `must be one of "-", "_", "/", "." or empty for none`, nil)
	// ErrInvalidStart: a start below 1, or above 10^length − 1, which
	// would leave every period without a number. New's error names the
	// range of the length.
	ErrInvalidStart = invalid("start", "must be from 1 to 10^length − 1 (999999 for length 6)", nil)
	// ErrInvalidID: ParseText or ParseID of something this format does not
	// make: another prefix or separator, another number of digits, a stamp
	// that is no calendar date, a sequence outside [start, 10^length − 1].
	ErrInvalidID = invalid("id", "not a number of this tag's dated format", nil)

	// ErrClockRange: Of for an instant outside the years 1000 to 9999 in
	// the tag's zone, whose stamp would not have its period's digits. The
	// clock that said so is wrong.
	ErrClockRange = errs.E(errs.Unavailable, "", "this instance's clock reads a year outside 1000 to 9999 in the tag's time zone: "+
		"its clock is wrong; retry on another instance", nil)
	// ErrPeriodExhausted: every sequence number of the current period is
	// issued; the next period (Key.End) starts a new counter.
	ErrPeriodExhausted = errs.E(errs.PeriodExhausted, "app_tag", "this period's numbers are all issued: "+
		"retry when the next period begins, or create a tag with a longer length", nil)

	// ErrNotNumeric: ID on a format with a prefix or a separator, whose
	// IDs are text only. A caller's mistake.
	ErrNotNumeric = errors.New("dated: a format with a prefix or a separator has text IDs only")
	// ErrSequenceRange: ID or AppendText for a stamp without its period's
	// digits or a sequence outside [start, 10^length − 1]. A caller's
	// mistake: the allocator never has such a number.
	ErrSequenceRange = errors.New("dated: stamp or sequence number outside the format's range")

	errPeriodCase  = invalid("period", "must be lower case: year, month, day, hour or minute", ErrInvalidPeriod)
	errZoneLocal   = invalid("time_zone", "Local is each machine's own zone, which may differ between instances: name the zone, such as Europe/Berlin", ErrInvalidTimeZone)
	errZoneShape   = invalid("time_zone", "is not shaped like an IANA time zone name (letters, digits, _ - + in parts joined by /), such as Asia/Shanghai", ErrInvalidTimeZone)
	errPrefixSpace = invalid("prefix", "has a space: use up to 12 letters or digits (A-Z, a-z, 0-9)", ErrInvalidPrefix)
	errPrefixChar  = invalid("prefix", "has a character other than a letter or digit: use up to 12 of A-Z, a-z, 0-9", ErrInvalidPrefix)

	errIDPrefix   = invalid("id", "does not begin with this tag's prefix and separator", ErrInvalidID)
	errIDShape    = invalid("id", "does not have the digits and separators of this tag's dated format", ErrInvalidID)
	errIDStamp    = invalid("id", "its stamp is not a date and time of the calendar in years 1000 to 9999", ErrInvalidID)
	errIDSequence = invalid("id", "its sequence number is outside this tag's start to 10^length − 1", ErrInvalidID)
)
