package segment

import (
	"strconv"
	"unicode/utf8"
)

// ValidTag reports whether s matches ^[A-Za-z0-9_.:-]{1,64}$, the only tags
// that may reach SQL, logs or metric labels.
func ValidTag(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// CheckNewTag applies a new tag's defaults to t (Start 0 means 1) and checks
// every field as Allocator.CreateTag does, with maxStep the cap of Step. It
// returns t as it is to be stored, or an *Error of KindInvalid for the first
// field at fault, in the order app_tag, step, start, description:
// ErrInvalidTag; an error naming the cap that is also ErrInvalidStep;
// ErrInvalidStart; ErrInvalidDescription.
//
// Every rule a new tag must meet lives here, so that HTTP and RESP refuse
// the same tags in the same words.
func CheckNewTag(t Tag, maxStep int64) (Tag, error) {
	return checkNewTag(t, maxStep, nil)
}

// stepError is the error for a step outside [1, maxStep].
func stepError(maxStep int64) *Error {
	return invalid("step", "must be from 1 to "+strconv.FormatInt(maxStep, 10), ErrInvalidStep)
}

// checkNewTag is CheckNewTag with the step error made ahead, as the
// Allocator does in New; nil makes it here.
func checkNewTag(t Tag, maxStep int64, errStep *Error) (Tag, error) {
	if t.Start == 0 {
		t.Start = 1
	}
	switch {
	case !ValidTag(t.AppTag):
		return t, ErrInvalidTag
	case t.Step < 1 || t.Step > maxStep:
		if errStep == nil {
			errStep = stepError(maxStep)
		}
		return t, errStep
	case t.Start < 1 || t.Start > MaxUsableID:
		return t, ErrInvalidStart
	case utf8.RuneCountInString(t.Description) > MaxDescription:
		return t, ErrInvalidDescription
	}
	return t, nil
}
