package segment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/naming"
	"github.com/idalloc/idalloc/scramble"
	"github.com/idalloc/idalloc/segment/dated"
)

// Format is how a tag's numbers are served (docs/api.md §7).
type Format string

// The formats of docs/api.md §7.
const (
	// FormatSequential serves the sequence itself: 1, 2, 3, … (the default).
	FormatSequential Format = "sequential"
	// FormatFixedLength serves the sequence from 10^(length-1), so that every
	// ID has exactly length digits.
	FormatFixedLength Format = "fixed_length"
	// FormatScrambled serves a keyed permutation of the length-digit
	// numbers: unique, exactly length digits, not guessable from each other.
	FormatScrambled Format = "scrambled"
)

// ValidTag reports whether s matches ^[A-Za-z0-9_.:-]{1,64}$, the only tags
// that may reach SQL, logs or metric labels (package naming's rule, which
// token names share).
func ValidTag(s string) bool { return naming.Valid(s) }

// NewTag is a tag as a client asks for it, before the defaults: what
// Allocator.CreateTag and CheckNewTag take. What a client may leave out
// is said explicitly, so no front end has to stand in for a value it was
// not sent: Start nil, Format "", Length 0 and Step 0 are "not given", as
// are the dated fields' "" (for Prefix and Separator "" is also the
// default, none).
type NewTag struct {
	AppTag string
	// Step is the fetch size; 0 when not given, which only format dated
	// takes: its default is DefaultDatedStep (docs/api.md §11).
	Step int64
	// Start is the tag's first ID, nil when not given: the format's
	// first ID. A given start is checked as given: 0 is below every
	// format's first ID, so it is refused as the start it is.
	Start       *int64
	Description string
	// Format is "" when not given: sequential.
	Format Format
	// Length is the digit count of a fixed_length or scrambled tag, or of
	// a dated tag's sequence part, 0 when not given. It is an int64 so
	// that a front end hands over any integer it read; the range is
	// checked here.
	Length int64

	// The settings of format dated (docs/api.md §11), "" when not given; a
	// tag of another format refuses each one given. Period is when the
	// sequence restarts (day by default), TimeZone the IANA zone it is
	// read in (UTC by default), Prefix and Separator the text around the
	// stamp (none by default).
	Period    dated.Period
	TimeZone  string
	Prefix    string
	Separator string
}

// CheckNewTag applies a new tag's defaults to n and checks every field as
// Allocator.CreateTag does, with maxStep the cap of Step. Defaults: Format
// "" is sequential; Start nil is the format's first ID (1; for fixed_length
// 10^(Length−1), which a smaller Start is raised to as well; scrambled
// takes no other start; dated, the first sequence number of every
// period, 1); a dated tag's Step 0 is DefaultDatedStep (or maxStep, if
// lower), its Length 0 is 6, its Period day and its TimeZone UTC. It
// returns the tag as it is to be stored (AppTag, Step, Start,
// Description, Format, Length, and a dated tag's FormatSpec; no MaxID,
// time or key), or an *errs.Error (errs.BadRequest) for the first field at
// fault, in the order app_tag, step, format, the dated fields, length,
// start, description: ErrInvalidTag; an error naming the cap that is
// also ErrInvalidStep; ErrInvalidFormat; for a tag of another format
// than dated, an error naming the dated field given, which is
// ErrDatedOnly; for a dated tag, dated.New's error for period,
// time_zone, length, prefix, separator or start (dated.ErrInvalidPeriod,
// ...); an error naming the format's range that is also ErrInvalidLength
// (sequential takes no length, fixed_length 1 to 18, scrambled 6 to 18);
// ErrInvalidStart, or an error naming the format's range that is also
// ErrInvalidStart (fixed_length: below 10^Length; scrambled: absent or
// 1); ErrInvalidDescription (too long), or ErrDescriptionNotText, which
// is also ErrInvalidDescription (not UTF-8, or a control character in
// it: a description is one line of text). It neither reads nor makes
// FormatKey: the Allocator makes a scrambled tag's key.
//
// Every rule a new tag must meet lives here, so that HTTP and RESP refuse
// the same tags in the same words.
func CheckNewTag(n NewTag, maxStep int64) (Tag, error) {
	return checkNewTag(n, maxStep, nil)
}

// stepError is the error for a step outside [1, maxStep].
func stepError(maxStep int64) *errs.Error {
	return invalid("step", "must be from 1 to "+strconv.FormatInt(maxStep, 10), ErrInvalidStep)
}

// checkNewTag is CheckNewTag with the step error made ahead, as the
// Allocator does in New; nil makes it here.
func checkNewTag(n NewTag, maxStep int64, errStep *errs.Error) (Tag, error) {
	if n.Step == 0 && n.Format == FormatDated {
		n.Step = min(DefaultDatedStep, maxStep)
	}
	switch {
	case !ValidTag(n.AppTag):
		return Tag{}, ErrInvalidTag
	case n.Step < 1 || n.Step > maxStep:
		if errStep == nil {
			errStep = stepError(maxStep)
		}
		return Tag{}, errStep
	}
	t := Tag{AppTag: n.AppTag, Step: n.Step, Description: n.Description, Format: n.Format}
	if err := checkFormatFields(&t, n); err != nil {
		return Tag{}, err
	}
	switch {
	case utf8.RuneCountInString(t.Description) > MaxDescription:
		return Tag{}, ErrInvalidDescription
	case !isText(t.Description):
		return Tag{}, ErrDescriptionNotText
	}
	return t, nil
}

// isText reports whether s is UTF-8 without control characters. Bytes that
// are not UTF-8 must be refused here, before the store: MySQL refuses them
// too (error 1366), and that refusal would read as a store fault, which a
// client retries for ever. Control characters are refused because a
// description is a one-line label for people: wherever a listing of tags
// is printed (a terminal, a line-oriented report), a line break in it
// forges lines, an escape sequence drives the terminal, a NUL cuts it.
func isText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// Tags returns the store's rows as of the last tag-list reload (every
// Config.TagRefresh, and on a miss: the rows written since the one before,
// and every row every few minutes), sorted by AppTag, plus the tags
// created through this allocator since, with MaxID Start-1 and this
// instance's time of creation, and those changed through it since
// (UpdateTag), as the store answered the change. Every fetch writes its
// tag's row, so MaxID is the store's as of the last reload, whichever
// instance fetched. Start is the tag's first ID as stored, whichever
// instance created it; 0 when the store does not know it. It never
// queries the store, so listing tags costs the store nothing however
// often it is asked; it copies the list once after rows changed, and not
// at all otherwise. Format is never empty (a row from before formats is
// sequential), and FormatKey is always nil: a scrambled tag's key stays
// in the store and this allocator's permutation, so no front end can show
// it; a dated tag's FormatSpec, which holds no secret, is there. The slice
// is shared: do not modify it.
func (a *Allocator) Tags() []Tag { return a.list.get() }

// CreateTag adds a tag to the store and serves it at once, in its format.
// The defaults are CheckNewTag's; a scrambled tag gets a new key of
// scramble.KeySize bytes from Config.Rand, which goes to the store and
// nowhere else. It returns the tag as stored, as Tags lists it (its start,
// format and length resolved, MaxID Start−1, no key), so that a front end
// answers and logs what was made without applying a rule itself.
// Errors: those of CheckNewTag with
// Config.MaxStep (ErrInvalidTag, ErrInvalidStep naming the cap,
// ErrInvalidFormat, ErrInvalidLength, ErrInvalidStart,
// ErrInvalidDescription, ErrDescriptionNotText), ErrTagExists,
// ErrFormatUnsupported (the store cannot keep formats yet; its words say
// how to upgrade it; or, for a dated tag, ErrDatedUnsupported: the store
// keeps no per-period counters), ErrInvalidFormat naming format for a
// dated or a scrambled tag in one region of several (Config.Region:
// regions do not split a period's counter, nor share a key made here; see
// region.go), ErrUnavailable (a store fault, or no key could be made),
// and dated's errors for a dated tag's fields.
func (a *Allocator) CreateTag(ctx context.Context, n NewTag) (Tag, error) {
	t, err := a.checkCreate(n)
	if err != nil {
		return Tag{}, err
	}
	if err := a.store.CreateTag(ctx, t); err != nil {
		if _, ok := errors.AsType[*errs.Error](err); ok {
			return Tag{}, err // the store's refusal, in the domain's words
		}
		return Tag{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return a.serveCreated([]Tag{t})[0], nil
}

// checkCreate is n as the store is to keep it, with its key made, or
// CreateTag's refusal of it: CheckNewTag's with Config.MaxStep, a dated
// tag without a PeriodStore, or no key to be had.
func (a *Allocator) checkCreate(n NewTag) (Tag, error) {
	t, err := checkNewTag(n, a.cfg.MaxStep, a.errStep)
	if err != nil {
		return Tag{}, err
	}
	switch {
	case t.Format == FormatDated && !a.region.Single():
		return Tag{}, errDatedRegions
	case t.Format == FormatScrambled && !a.region.Single():
		return Tag{}, errScrambledRegions
	case t.Format == FormatDated && a.periods == nil:
		return Tag{}, ErrDatedUnsupported
	}
	if t.Format == FormatScrambled {
		t.FormatKey = make([]byte, scramble.KeySize)
		if _, err := io.ReadFull(a.cfg.Rand, t.FormatKey); err != nil {
			return Tag{}, fmt.Errorf("%w: make the scrambled key: %w", ErrUnavailable, err)
		}
	}
	return t, nil
}

// serveCreated serves tags, just written to the store, and lists them
// with MaxID Start−1 and this instance's time; it returns them as listed.
// A tag a reload listed meanwhile keeps the row the reload read, which
// may be newer (another instance fetched it since).
func (a *Allocator) serveCreated(tags []Tag) []Tag {
	now := a.now()
	for i := range tags {
		tags[i].MaxID, tags[i].UpdateTime = tags[i].Start-1, now
	}
	a.tagsMu.Lock()
	a.addTagsLocked(tags)
	unlisted := make([]Tag, 0, len(tags))
	for _, t := range tags {
		if _, ok := a.list.find(t.AppTag); !ok {
			unlisted = append(unlisted, t)
		}
	}
	a.list.put(unlisted...)
	a.tagsMu.Unlock()
	for i := range tags {
		tags[i] = listed(tags[i])
	}
	return tags
}
