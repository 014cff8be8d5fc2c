package segment

import (
	"strconv"

	"github.com/idalloc/idalloc/errs"
)

// The size of one batch of IDs: the count of GET /alloc and /snowflake,
// of RESP's IDS and SNOWFLAKE, and the Go client's fetches (max_batch).
const (
	// DefaultMaxBatch is the largest count when max_batch is not set.
	DefaultMaxBatch = 1000
	// MaxMaxBatch is the largest max_batch may be.
	MaxMaxBatch = 100_000
)

// ErrInvalidCount: a batch's count that is not an integer from 1 to the
// configured maximum. A CountLimit's own error names its maximum:
// "invalid count: must be an integer from 1 to 1000".
var ErrInvalidCount = invalid("count", "must be an integer from 1 to the configured maximum (max_batch)", nil)

// CountLimit is the rule of a batch's count, an integer from 1 to Max, and
// the words that refuse any other. Every front end checks counts with one,
// so HTTP and RESP refuse the same counts in the same words. The refusal is
// made once, in NewCountLimit, so a flood of bad counts allocates nothing.
// The zero CountLimit is DefaultMaxBatch's.
type CountLimit struct {
	max int
	err *errs.Error
}

// NewCountLimit returns the limit of counts from 1 to max; a max below 1
// means DefaultMaxBatch. It does not hold max to MaxMaxBatch: the
// configuration does, before.
func NewCountLimit(max int) CountLimit {
	if max < 1 {
		max = DefaultMaxBatch
	}
	return CountLimit{max: max,
		err: invalid("count", "must be an integer from 1 to "+strconv.Itoa(max), ErrInvalidCount)}
}

// defaultCountLimit is the zero CountLimit's.
var defaultCountLimit = NewCountLimit(DefaultMaxBatch)

// Max is the largest count l allows.
func (l CountLimit) Max() int {
	if l.err == nil {
		return defaultCountLimit.max
	}
	return l.max
}

// Check returns nil for a count from 1 to Max, else Err.
func (l CountLimit) Check(n int) error {
	if n < 1 || n > l.Max() {
		return l.Err()
	}
	return nil
}

// Err is l's refusal, also for a count the front end could not read as an
// integer at all. It is ErrInvalidCount.
func (l CountLimit) Err() error {
	if l.err == nil {
		return defaultCountLimit.err
	}
	return l.err
}
