package dated

import "strconv"

// ID returns the numeric ID of sequence number seq in period k:
// k.Stamp × 10^length + seq (20261126000123). It does not allocate.
// Errors: ErrNotNumeric when f has a prefix or a separator (its IDs are
// text: AppendText); ErrSequenceRange when k.Stamp has not the period's
// digits or seq is outside [Start, MaxSeq].
func (f *Format) ID(k Key, seq int64) (int64, error) {
	if !f.Numeric() {
		return 0, ErrNotNumeric
	}
	if !f.inRange(k.Stamp, seq) {
		return 0, ErrSequenceRange
	}
	return k.Stamp*f.pow + seq, nil
}

// inRange reports whether stamp has the period's digits and seq is one
// of a period's sequence numbers. It does not check the calendar: the
// allocator's stamps come from Of.
func (f *Format) inRange(stamp, seq int64) bool {
	return stamp >= f.minStamp && stamp < f.stampLimit && seq >= f.start && seq < f.pow
}

// AppendText appends the text ID of sequence number seq in period k to
// dst and returns the extended slice: prefix, separator, stamp,
// separator, seq zero-padded to length digits ("ORD-20261126-000123";
// the separator after the prefix only when there is a prefix; for a
// numeric format, the number's digits). It allocates only when dst has
// less than MaxTextLength bytes of room. Errors: ErrSequenceRange, as
// for ID; dst is then returned unchanged.
func (f *Format) AppendText(dst []byte, k Key, seq int64) ([]byte, error) {
	if !f.inRange(k.Stamp, seq) {
		return dst, ErrSequenceRange
	}
	if f.prefix != "" {
		dst = append(append(dst, f.prefix...), f.sep...)
	}
	dst = strconv.AppendInt(dst, k.Stamp, 10)
	dst = append(dst, f.sep...)
	for p := f.pow / 10; p > 1 && seq < p; p /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, seq, 10), nil
}

// Text returns AppendText's ID as a string.
func (f *Format) Text(k Key, seq int64) (string, error) {
	var buf [MaxTextLength]byte
	b, err := f.AppendText(buf[:0], k, seq)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ParseID returns the stamp and sequence number of a numeric ID of f,
// for tests, migrations and tools: the inverse of ID. Errors: ErrInvalidID
// (Kind BadRequest, Field "id") when f has text IDs, or id is not a number
// f makes: a stamp without the period's digits or that is no calendar
// date and time (month 13, 30 February, hour 24), or a sequence outside
// [Start, MaxSeq]. It does not say whether the zone's wall clock ever read
// the stamp (a skipped hour is still a calendar time).
func (f *Format) ParseID(id int64) (stamp, seq int64, err error) {
	if !f.Numeric() {
		return 0, 0, errIDShape
	}
	if id < 0 || id/f.pow < f.minStamp || id/f.pow >= f.stampLimit {
		return 0, 0, errIDShape
	}
	return f.check(id/f.pow, id%f.pow)
}

// ParseText returns the stamp and sequence number of a text ID of f: the
// inverse of AppendText. It is strict: every text it accepts is the one
// AppendText makes of its result. Errors: ErrInvalidID as for ParseID, and
// for another prefix or separator, or digits of another number.
func (f *Format) ParseText(s string) (stamp, seq int64, err error) {
	if f.prefix != "" {
		if len(s) < len(f.prefix)+len(f.sep) || s[:len(f.prefix)] != f.prefix || s[len(f.prefix):len(f.prefix)+len(f.sep)] != f.sep {
			return 0, 0, errIDPrefix
		}
		s = s[len(f.prefix)+len(f.sep):]
	}
	digits := f.period.Digits()
	if len(s) != digits+len(f.sep)+f.length || s[digits:digits+len(f.sep)] != f.sep {
		return 0, 0, errIDShape
	}
	stamp, ok1 := decimal(s[:digits])
	seq, ok2 := decimal(s[digits+len(f.sep):])
	if !ok1 || !ok2 || stamp < f.minStamp {
		return 0, 0, errIDShape
	}
	return f.check(stamp, seq)
}

// check refuses a stamp that is no calendar time and a sequence number
// outside the format's.
func (f *Format) check(stamp, seq int64) (int64, int64, error) {
	if _, ok := splitStamp(stamp, f.rank); !ok {
		return 0, 0, errIDStamp
	}
	if seq < f.start || seq >= f.pow {
		return 0, 0, errIDSequence
	}
	return stamp, seq, nil
}

// decimal reads s, 1 to 18 ASCII digits and nothing else, as a number.
func decimal(s string) (int64, bool) {
	if len(s) == 0 || len(s) > MaxDigits {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
