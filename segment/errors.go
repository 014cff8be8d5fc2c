package segment

import (
	"errors"
	"strconv"

	"github.com/idalloc/idalloc/errs"
)

// Every refusal of this package is an *errs.Error: a Kind from idalloc's
// one vocabulary, the field at fault, and the words a user reads, which
// every front end sends unchanged (package errs).

func invalid(field, reason string, sentinel error) *errs.Error {
	return errs.E(errs.BadRequest, field, reason, sentinel)
}

// Sentinel errors; callers match them with errors.Is. Those that are *errs.Error
// carry the words every front end answers with.
var (
	// ErrInvalidTag: the app_tag does not match ^[A-Za-z0-9_.:-]{1,64}$.
	ErrInvalidTag = invalid("app_tag", "must match ^[A-Za-z0-9_.:-]{1,64}$", nil)
	// ErrInvalidStep: CreateTag with a step below 1 or above the configured
	// cap, or a start out of range (ErrInvalidStart). The Allocator's own
	// error names its cap: "invalid step: must be from 1 to 1000000".
	ErrInvalidStep = invalid("step", "must be from 1 to the configured maximum (segment.max_step)", nil)
	// ErrInvalidStart: CreateTag with a start below 1 or above MaxUsableID.
	// It is also ErrInvalidStep.
	ErrInvalidStart = invalid("start", "must be from 1 to "+strconv.FormatInt(MaxUsableID, 10), ErrInvalidStep)
	// ErrInvalidDescription: CreateTag with a description longer than
	// MaxDescription characters, or one that is not text
	// (ErrDescriptionNotText).
	ErrInvalidDescription = invalid("description", "longer than "+strconv.Itoa(MaxDescription)+" characters", nil)
	// ErrDescriptionNotText: CreateTag with a description that is not
	// UTF-8 or holds a control character (unicode.IsControl: NUL, tab,
	// CR, LF, DEL, …). It is also ErrInvalidDescription. A front end
	// whose decoder mends such input without a word (encoding/json makes
	// U+FFFD of bytes that are not UTF-8) answers it itself when what it
	// was sent was not text.
	ErrDescriptionNotText = invalid("description", "must be UTF-8 text without control characters (NUL, tab, line breaks)", ErrInvalidDescription)
	// ErrUnknownTag: no such tag in the store.
	ErrUnknownTag = errs.E(errs.UnknownTag, "app_tag", "unknown app_tag: create it first (POST /tags, or HSET over RESP)", nil)
	// ErrTagExists: CreateTag for a tag that is already there.
	ErrTagExists = errs.E(errs.Exists, "app_tag", "app_tag already exists", nil)
	// ErrExhausted: the tag's ID space (up to MaxUsableID) is used up.
	ErrExhausted = errs.E(errs.Exhausted, "app_tag", "app_tag ID space exhausted", nil)
	// ErrUnavailable: the IDs asked for are not buffered and the store did
	// not deliver in time (or a store call failed).
	ErrUnavailable = errs.E(errs.Unavailable, "", "unavailable: the store is unreachable or too slow; retry (IDs already buffered are still served)", nil)
	// ErrClosed: the allocator is closed (draining).
	ErrClosed = errs.E(errs.Draining, "", "draining: retry on another instance", nil)

	// ErrRewound: the store handed out a range that does not start above
	// every range this allocator already received for the tag, as a primary
	// rewound by a failover would (its last max_id updates lost). Nothing is
	// issued from such a range; the fetch is retried as after a fault.
	ErrRewound = errors.New("the store handed out a range at or below one this instance already received (was the database rewound by a failover?); refusing it")
	// ErrInvalidConfig: a negative Config field.
	ErrInvalidConfig = errors.New("invalid segment config")
)
