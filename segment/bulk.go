package segment

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/idalloc/idalloc/errs"
)

// MaxCreateTags is the most tags one CreateTags takes: a tenant per tag,
// 100,000 tags of an instance (docs/api.md §13) in one request.
const MaxCreateTags = 100_000

var (
	// ErrNoTags: CreateTags with no tag.
	ErrNoTags = invalid("tags", "no tags given: give at least one", nil)
	// ErrTooManyTags: CreateTags with more than MaxCreateTags tags.
	ErrTooManyTags = invalid("tags", "more than "+strconv.Itoa(MaxCreateTags)+" tags: create them in several requests", nil)
	// ErrTagRepeated: CreateTags given one app_tag twice; the error names
	// the second entry, and the first in its words.
	ErrTagRepeated = invalid("app_tag", "given twice in one request", nil)
)

// CreateTags creates many tags at once, as CreateTag creates one, and
// serves them at once: one store transaction per chunk of a thousand,
// where CreateTag is one each. The rule a user can rely on:
//
//   - Every entry is checked first, by CreateTag's rules, and no app_tag
//     may be given twice: the first entry at fault refuses the whole
//     request before anything is written, with CreateTag's refusal of it
//     naming the entry: an *errs.Error whose Field is "tags[i]." and the
//     field ("tags[3].step": "invalid tags[3].step: must be from 1 to
//     1000000"), which is also CreateTag's sentinel (ErrInvalidStep, …);
//     ErrTagRepeated names the later entry. An empty request is ErrNoTags,
//     one of more than MaxCreateTags ErrTooManyTags.
//   - An entry whose tag exists already is not written (its numbers stay
//     as they are), and does not stop the others: every other entry is
//     created, and the error is a *TagsExistError listing the entries that
//     existed, which is ErrTagExists (kind exists). A request sent again
//     after a failure thus creates what is missing and reports the rest as
//     existing.
//   - A store fault stops the request at the chunk it hit: the chunks
//     before it are created, and served; the error is ErrUnavailable,
//     saying how many were created.
//
// It returns the tags it created, in the order of the request, as
// CreateTag returns each (as stored, as Tags lists it, no key); nil when
// it created none.
func (a *Allocator) CreateTags(ctx context.Context, tags []NewTag) ([]Tag, error) {
	switch {
	case len(tags) == 0:
		return nil, ErrNoTags
	case len(tags) > MaxCreateTags:
		return nil, ErrTooManyTags
	}
	rows := make([]Tag, len(tags))
	first := make(map[string]int, len(tags))
	for i, n := range tags {
		t, err := a.checkCreate(n)
		if err != nil {
			return nil, entryError(i, err)
		}
		if j, ok := first[t.AppTag]; ok {
			return nil, errs.E(errs.BadRequest, entryField(i, "app_tag"),
				"the app_tag of tags["+strconv.Itoa(j)+"] again: each tag is created once", ErrTagRepeated)
		}
		first[t.AppTag] = i
		rows[i] = t
	}
	created, err := a.store.CreateTags(ctx, rows)
	var made []Tag
	var existed []int
	for i, ok := range created {
		if ok {
			made = append(made, rows[i])
		} else {
			existed = append(existed, i)
		}
	}
	if len(made) > 0 {
		made = a.serveCreated(made)
	}
	switch {
	case err != nil && len(created) == 0:
		if _, ok := errors.AsType[*errs.Error](err); ok {
			return nil, err // the store's refusal, in the domain's words
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case err != nil:
		return made, fmt.Errorf("%w: the entries before tags[%d] were written (%d tags created, %d existed), the rest not: %w",
			ErrUnavailable, len(created), len(made), len(existed), err)
	case len(existed) > 0:
		return made, newTagsExistError(existed, len(made))
	}
	return made, nil
}

// entryField is the name of field of the request's entry i: "tags[3].step",
// or "tags[3]" for the entry itself.
func entryField(i int, field string) string {
	f := "tags[" + strconv.Itoa(i) + "]"
	if field != "" {
		f += "." + field
	}
	return f
}

// entryError is err, CreateTag's refusal of the request's entry i, naming
// the entry: its field as entryField, and a reason that names it when the
// message does not show the field. It is a case of err.
func entryError(i int, err error) error {
	e, ok := errs.Describe(err)
	if !ok {
		return fmt.Errorf("%s: %w", entryField(i, ""), err)
	}
	reason := e.Reason
	if e.Kind != errs.BadRequest || e.Field == "" {
		reason = entryField(i, "") + ": " + reason
	}
	return errs.E(e.Kind, entryField(i, e.Field), reason, err)
}

// TagsExistError is CreateTags' report of the entries whose tags existed
// already: those were not written, every other entry was created. It is
// ErrTagExists, an *errs.Error of kind exists naming the first such
// entry's app_tag.
type TagsExistError struct {
	// Index lists the entries whose tags existed, as indexes of the
	// request, in order.
	Index []int
	first *errs.Error
}

func newTagsExistError(index []int, made int) *TagsExistError {
	reason := "the app_tag of " + entryField(index[0], "") + " exists already"
	switch n := len(index) - 1; n {
	case 0:
	case 1:
		reason += ", as does that of 1 more entry"
	default:
		reason += ", as do those of " + strconv.Itoa(n) + " more entries"
	}
	reason += ": not created; the other " + strconv.Itoa(made) + " were"
	return &TagsExistError{Index: index, first: errs.E(errs.Exists, entryField(index[0], "app_tag"), reason, ErrTagExists)}
}

func (e *TagsExistError) Error() string { return e.first.Error() }

// Unwrap returns the *errs.Error of the first entry that existed.
func (e *TagsExistError) Unwrap() error { return e.first }
