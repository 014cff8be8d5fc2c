package segment

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/idalloc/idalloc/errs"
)

// TagChange is what UpdateTag may change of a tag: what never changes its
// numbers (docs/api.md §12, PATCH /tags). A nil field is left as it is.
type TagChange struct {
	// Step is the fetch size, and so the adaptive step's floor.
	Step        *int64
	Description *string
}

var (
	// ErrUnchangeable: an update naming a setting that is fixed when the
	// tag is created (UnchangeableField). Each refusal names its field
	// and says why.
	ErrUnchangeable = invalid("", "never changes once the tag is created", nil)
	// ErrNoChange: an update that changes nothing.
	ErrNoChange = errs.E(errs.BadRequest, "", "nothing to change: give step, description or both", nil)
)

// unchangeable are the reasons each setting fixed at create stays as it
// is, by the name every front end gives it.
var unchangeable = func() map[string]*errs.Error {
	const (
		numbers = "never changes once the tag is created: its IDs are made in it, and another would issue " +
			"numbers its users may hold already; create a new tag for another one"
		datedText = "never changes once the tag is created: a dated tag's IDs carry it, and another would " +
			"reshape or repeat numbers issued already; create a new tag for another one"
	)
	reasons := map[string]string{
		"app_tag": "never changes: a tag is never renamed, as its IDs stay with its name; create the new name " +
			"with start above this one's max_id and move its clients there",
		"format": numbers,
		"length": numbers,
		"start": "never changes once the tag is created: IDs were issued from it, and a tag's next ID is " +
			"always above its max_id",
		"max_id":    "never changes by an update: lowering it would repeat IDs; move it forward with idalloc advance",
		"period":    datedText,
		"time_zone": datedText,
		"prefix":    datedText,
		"separator": datedText,
	}
	m := make(map[string]*errs.Error, len(reasons))
	for field, why := range reasons {
		m[field] = invalid(field, why, ErrUnchangeable)
	}
	return m
}()

// UnchangeableField returns the refusal of an update that names field, a
// setting fixed at create (app_tag, format, length, start, max_id, and
// format dated's period, time_zone, prefix and separator): an
// *errs.Error naming the field and why it never changes, which is also
// ErrUnchangeable. It returns nil for any other name, which is the front
// end's to judge: step and description may change, the rest is unknown.
func UnchangeableField(field string) error {
	if e, ok := unchangeable[field]; ok {
		return e
	}
	return nil
}

// CheckTagChange checks c as UpdateTag does, with maxStep the cap of Step:
// ErrNoChange when it changes nothing; an error naming the cap that is
// also ErrInvalidStep; ErrInvalidDescription (too long) or
// ErrDescriptionNotText. The rules are CheckNewTag's for the same fields.
func CheckTagChange(c TagChange, maxStep int64) error {
	return checkTagChange(c, maxStep, nil)
}

func checkTagChange(c TagChange, maxStep int64, errStep *errs.Error) error {
	switch {
	case c.Step == nil && c.Description == nil:
		return ErrNoChange
	case c.Step != nil && (*c.Step < 1 || *c.Step > maxStep):
		if errStep == nil {
			errStep = stepError(maxStep)
		}
		return errStep
	case c.Description == nil:
		return nil
	case utf8.RuneCountInString(*c.Description) > MaxDescription:
		return ErrInvalidDescription
	case !isText(*c.Description):
		return ErrDescriptionNotText
	}
	return nil
}

// UpdateTag changes tag's step or description, or both, in the store, and
// on this allocator at once: the next fetch of tag here takes the new step
// as the adaptive step's floor, and Tags lists the row as changed. Other
// allocators on the store take the new step from their next tag-list
// reload (Config.TagRefresh). A step change moves no max_id: IDs reserved
// already are served as they are. It returns the row as Tags lists it
// (no key). Errors: ErrInvalidTag; CheckTagChange's with Config.MaxStep;
// ErrUnknownTag; ErrUnavailable (a store fault, or no answer within
// Config.FetchTimeout).
//
// It holds the tag-list reload's lock throughout, so that a reload that
// read the rows before the change cannot list the old row, or set the old
// step, after it.
func (a *Allocator) UpdateTag(ctx context.Context, tag string, c TagChange) (Tag, error) {
	if !ValidTag(tag) {
		return Tag{}, ErrInvalidTag
	}
	if err := checkTagChange(c, a.cfg.MaxStep, a.errStep); err != nil {
		return Tag{}, err
	}
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	// Bounded as a reload is: the refresher waits for this lock.
	ctx, cancel := context.WithTimeout(ctx, a.cfg.FetchTimeout)
	defer cancel()
	t, err := a.store.UpdateTag(ctx, tag, c)
	if err != nil {
		if _, ok := errors.AsType[*errs.Error](err); ok {
			return Tag{}, err // the store's refusal (unknown tag), in the domain's words
		}
		return Tag{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	a.tagsMu.Lock()
	// A tag new to this allocator is served from here on, in its format:
	// a scrambled one's key comes with the row, as from a reload.
	a.addTagsLocked([]Tag{t})
	a.list.put(t)
	b := a.index.get(tag)
	a.tagsMu.Unlock()
	if c.Step != nil && b != nil {
		b.followRowStep(t.Step)
	}
	return listed(t), nil
}

// followRowStep makes step the row's step of b, and of a dated tag's
// period buffers: the floor of their next fetch.
func (b *buffer) followRowStep(step int64) {
	if d := b.dated; d != nil {
		d.mu.Lock()
		for _, p := range [...]*buffer{d.cur.Load(), d.upcoming} {
			if p != nil {
				p.setRowStep(step)
			}
		}
		d.mu.Unlock()
	}
	b.setRowStep(step)
}

// setRowStep sets b's row step, and marks it set, so that a fetch under
// way, whose store read may precede the change, does not put back the
// step it read (fetchLoop).
func (b *buffer) setRowStep(step int64) {
	b.mu.Lock()
	b.rowStep = step
	b.rowStepSet++
	b.mu.Unlock()
}
