package segment

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/idalloc/idalloc/errs"
)

// CheckRow reports whether t may be a row of the segments table, whoever
// writes it: a store's CreateTag (for the Allocator, a migration or a
// test) and idalloc migrate, for each row it reads from a source. It is
// the rule of what a row can hold, looser than CheckNewTag's rule of what
// a client may ask for: no step cap, any start from 1 (a migrated tag
// goes on where its source stopped; Start 0 is unknown), a description
// bounded by the column only, and a format the allocator can serve
// (CheckFormat, a scrambled tag's key included). MaxID must not be
// negative: the first ID is 1.
//
// The error is an *errs.Error (errs.BadRequest) for the first field at fault,
// in the order app_tag, step, start, max_id, description, format, whose
// Reason says what is wrong with the value as a report of rows reads it
// ("step 0 is below 1"). It is also the field's sentinel: ErrInvalidTag,
// ErrInvalidStep, ErrInvalidStart (for start and max_id),
// ErrInvalidDescription, or CheckFormat's error (a bad key is a fault, not
// an *errs.Error, as there).
func CheckRow(t Tag) error {
	switch {
	case t.AppTag == "":
		return invalid("app_tag", "empty name", ErrInvalidTag)
	case len(t.AppTag) > 64:
		return invalid("app_tag", fmt.Sprintf("name longer than idalloc's 64 characters (%d bytes)", len(t.AppTag)), ErrInvalidTag)
	case !ValidTag(t.AppTag):
		return invalid("app_tag", "name has a character outside [A-Za-z0-9_.:-]", ErrInvalidTag)
	case t.Step < 1:
		return invalid("step", fmt.Sprintf("step %d is below 1", t.Step), ErrInvalidStep)
	case t.Start < 0:
		return invalid("start", fmt.Sprintf("start %d is below 1", t.Start), ErrInvalidStart)
	case t.MaxID < 0:
		return invalid("max_id", fmt.Sprintf("max_id %d is negative", t.MaxID), ErrInvalidStart)
	case utf8.RuneCountInString(t.Description) > MaxDescription:
		return invalid("description", "description longer than "+strconv.Itoa(MaxDescription)+" characters", ErrInvalidDescription)
	}
	if err := CheckFormat(t); err != nil {
		// Its words name the format, length or key size, never the key.
		if e, ok := errs.Describe(err); ok {
			return invalid(e.Field, "number format: "+err.Error(), err)
		}
		return fmt.Errorf("number format: %w", err) // a key that is not one: a fault
	}
	return nil
}
