package dated

import (
	"strconv"
	"time"
)

// ExhaustedError is ErrPeriodExhausted for one period, with when the next
// one begins: a front end answers its RetryAfter (HTTP's Retry-After)
// without reading words. errors.Is(err, ErrPeriodExhausted) matches it,
// errs.KindOf(err) is PeriodExhausted, and errors.As finds the fields:
//
//	var pe *dated.ExhaustedError
//	if errors.As(err, &pe) {
//		w.Header().Set("Retry-After", strconv.FormatInt(pe.RetryAfterSeconds(), 10))
//	}
type ExhaustedError struct {
	// Stamp is the spent period's stamp.
	Stamp int64
	// Next is when the next period begins: the spent period's Key.End.
	Next time.Time
	// RetryAfter is Next less the clock's reading when the number was
	// refused; 0 when the period has ended since.
	RetryAfter time.Duration
}

// Error says what ErrPeriodExhausted says, and in how many seconds the
// next period begins (for protocols without a Retry-After, such as RESP).
func (e *ExhaustedError) Error() string {
	return ErrPeriodExhausted.Error() + " (the next period begins in " + strconv.FormatInt(e.RetryAfterSeconds(), 10) + "s)"
}

// Unwrap returns ErrPeriodExhausted, whose Kind and words front ends map.
func (e *ExhaustedError) Unwrap() error { return ErrPeriodExhausted }

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1:
// the value of an HTTP Retry-After, which is never 0 (a client retrying at
// once would find the same period spent for the rest of its last second).
func (e *ExhaustedError) RetryAfterSeconds() int64 {
	return max(1, int64((e.RetryAfter+time.Second-1)/time.Second))
}
