package segment

import (
	"errors"
	"fmt"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/scramble"
	"github.com/idalloc/idalloc/segment/dated"
)

// A tag's format (docs/api.md §7) is fixed when it is created and decides how
// the tag's sequence, the numbers the store's max_id counts, becomes IDs:
//
//   - sequential: the ID is the sequence number, up to MaxUsableID.
//   - fixed_length: the ID is the sequence number too, which starts at
//     10^(length−1) or above, and the tag is exhausted after 10^length − 1.
//   - scrambled: the sequence counts n = 1, 2, … and the ID is
//     scramble's keyed permutation of n−1 onto the length-digit numbers;
//     the tag is exhausted after 9·10^(length−1) IDs.
//
// So segments, give-back, restarts and the store's compare-and-set work on
// the sequence alike for every format, and uniqueness of the sequence is
// uniqueness of the IDs (the permutation is a bijection). Sequential and
// fixed_length IDs strictly increase per instance, as the sequence does;
// scrambled IDs do not, by design: they are unique, in no order.
//
// dated (docs/api.md §11) counts its sequence per (tag, period) instead, each
// period from the tag's start to 10^length − 1, and writes the period's
// stamp before it: see dated_buffer.go.

// Length bounds per format (docs/api.md §7).
const (
	// MaxLength is the most digits a fixed_length or scrambled ID has:
	// 10^18 − 1 fits an int64.
	MaxLength = scramble.MaxLength
	// MinScrambledLength is the fewest digits of a scrambled ID: FF1 wants
	// a domain of at least 10^6.
	MinScrambledLength = scramble.MinLength
)

// Errors of a tag's format, for CheckNewTag and CheckFormat. The length
// errors name the format they are for; all are ErrInvalidLength.
var (
	// ErrInvalidFormat: a format other than sequential, fixed_length,
	// scrambled and dated.
	ErrInvalidFormat = invalid("format", "must be sequential, fixed_length, scrambled or dated", nil)
	// ErrInvalidLength: a length outside its format's range: none (0) for
	// sequential, 1 to 18 for fixed_length, 6 to 18 for scrambled.
	ErrInvalidLength = invalid("length", "must be absent for format sequential, from 1 to 18 for fixed_length, from 6 to 18 for scrambled", nil)

	errLengthSequential = invalid("length", "must be absent (or 0) for format sequential; "+
		"send format fixed_length or scrambled for IDs of a fixed number of digits", ErrInvalidLength)
	errLengthFixed     = invalid("length", "must be from 1 to 18 for format fixed_length", ErrInvalidLength)
	errLengthScrambled = invalid("length", "must be from 6 to 18 for format scrambled", ErrInvalidLength)
	errStartScrambled  = invalid("start", "must be absent (or 1) for format scrambled: its IDs follow no order, "+
		"so there is no first one to choose", ErrInvalidStart)

	// ErrFormatUnsupported: the store cannot keep a tag's format, as an
	// older MySQL table without the format columns cannot; the store's
	// error (FormatUnsupported) says how to upgrade it. Only sequential
	// tags can be created there meanwhile.
	ErrFormatUnsupported = invalid("format", "this store keeps only sequential tags", nil)

	// errBadRow marks a row whose format this instance cannot serve (a
	// hand-edited row, a format from a newer version, a scrambled row
	// without its key). Its tag is refused as a fault, never served in
	// another format.
	errBadRow = errors.New("the tag's row holds a number format this instance cannot serve")
)

// FormatUnsupported returns the error of a store that cannot keep number
// formats, with fix (how to make it able, shown to the user) in its words.
// It is ErrFormatUnsupported.
func FormatUnsupported(fix string) *errs.Error {
	return invalid("format", ErrFormatUnsupported.Reason+": "+fix, ErrFormatUnsupported)
}

// pow10[i] is 10^i for i ≤ 18.
var pow10 = func() (p [MaxLength + 1]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = 10 * p[i-1]
	}
	return p
}()

// fixedStartError is the error for a fixed_length start that leaves no
// length-digit ID.
func fixedStartError(length int) *errs.Error {
	return invalid("start", fmt.Sprintf("must be from 1 to %d for format fixed_length with length %d", pow10[length]-1, length),
		ErrInvalidStart)
}

// checkNewFormat checks the format, length and start a client gave (start
// nil and length 0: not given) in that order, and sets t's Format, Length
// and Start to them with the format's defaults applied (Format "" is
// sequential, no start is the format's first ID). t.Step and t.AppTag are
// checked already.
func checkNewFormat(t *Tag, start *int64, length int64) error {
	if t.Format == "" {
		t.Format = FormatSequential
	}
	t.Start = 1
	if start != nil {
		t.Start = *start
	}
	switch t.Format {
	case FormatSequential:
		if length != 0 {
			return errLengthSequential
		}
		if t.Start < 1 || t.Start > MaxUsableID {
			return ErrInvalidStart
		}
	case FormatFixedLength:
		if length < 1 || length > MaxLength {
			return errLengthFixed
		}
		t.Length = int(length)
		if t.Start < 1 || t.Start >= pow10[t.Length] {
			return fixedStartError(t.Length)
		}
		t.Start = max(t.Start, pow10[t.Length-1])
	case FormatScrambled:
		if length < MinScrambledLength || length > MaxLength {
			return errLengthScrambled
		}
		t.Length = int(length)
		if t.Start != 1 {
			return errStartScrambled
		}
	default: // dated is checkNewDated's
		return ErrInvalidFormat
	}
	return nil
}

// CheckFormat reports whether t's Format, Length, Start, FormatKey and
// FormatSpec are a format the allocator can serve: Format "" or
// sequential with Length 0 and no key; fixed_length with Length 1 to 18
// and no key; scrambled with Length 6 to 18 and a key of 16, 24 or 32
// bytes; dated with a FormatSpec dated.ParseSpec reads, and a Length and
// Start its period allows. Only dated has a FormatSpec. Stores apply it
// to every row they create, since a migration creates rows without
// CheckNewTag. Errors: ErrInvalidFormat, ErrInvalidLength, dated's errors
// naming their field (dated.ErrInvalidSpec, dated.ErrInvalidLength, ...),
// or a fault for the key.
func CheckFormat(t Tag) error {
	_, err := formatOf(t)
	return err
}

// tagFormat is how a buffer serves its tag: the highest sequence number
// the format has IDs for (for dated, in each period), the permutation of
// a scrambled tag and the format of a dated one (nil for the others).
type tagFormat struct {
	format Format
	length int
	limit  int64
	perm   *scramble.Permutation
	dated  *dated.Format
}

// formatOf checks t's format fields and returns how to serve them.
func formatOf(t Tag) (tagFormat, error) {
	f := tagFormat{format: t.Format, length: t.Length}
	if f.format == "" {
		f.format = FormatSequential
	}
	if f.format != FormatScrambled && len(t.FormatKey) != 0 {
		return f, errors.New("a format_key on a tag that is not scrambled")
	}
	if f.format != FormatDated && t.FormatSpec != "" {
		return f, errSpecNotDated
	}
	switch f.format {
	case FormatSequential:
		if t.Length != 0 {
			return f, errLengthSequential
		}
		f.limit = MaxUsableID
	case FormatFixedLength:
		if t.Length < 1 || t.Length > MaxLength {
			return f, errLengthFixed
		}
		f.limit = pow10[t.Length] - 1
	case FormatScrambled:
		if t.Length < MinScrambledLength || t.Length > MaxLength {
			return f, errLengthScrambled
		}
		p, err := scramble.New(t.FormatKey, t.Length)
		if err != nil {
			// The error names the key's size, never its bytes.
			return f, fmt.Errorf("scrambled tag: %w", err)
		}
		f.perm = p
		f.limit = int64(p.Size())
	case FormatDated:
		d, err := t.DatedFormat()
		if err != nil {
			return f, err
		}
		f.dated, f.limit = d, d.MaxSeq()
	default:
		return f, ErrInvalidFormat
	}
	return f, nil
}

// issue returns the ID of index k: the number k·Count + ID of the
// allocator's region (k itself in a single region), which a scrambled
// tag's permutation maps on as its sequence number (from 1). The
// buffer's spans end at its limit, so the number is always in range; the
// error is for the impossible case, where issuing nothing is the only
// safe answer.
func (b *buffer) issue(k int64) (int64, error) {
	n := b.a.region.number(k)
	if b.perm == nil {
		return n, nil
	}
	id, err := b.perm.Encode(uint64(n - 1))
	if err != nil {
		return 0, ErrExhausted
	}
	return int64(id), nil
}

// issueAll turns the indexes in dst into IDs, in place.
func (b *buffer) issueAll(dst []int64) error {
	for i, k := range dst {
		id, err := b.issue(k)
		if err != nil {
			return err
		}
		dst[i] = id
	}
	return nil
}
