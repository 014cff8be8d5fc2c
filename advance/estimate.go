package advance

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// Estimate sizes a tag's move from how long the lost history spans (-for),
// since no store records a tag's rate: a restored row holds max_id, its
// configured step, the time of its last fetch and its start, which say how
// many IDs were taken in all but not how fast. What bounds the rate is the
// allocator's adaptive step. A segment used up in less than
// segment.TargetDuration (15 minutes) doubles the next step, up to
// segment.max_step (or the row's own step when that is larger), so an
// instance whose step is below that cap takes at most one cap's worth per
// 15 minutes: MaxStep/15min, 1,111 IDs/s at the default 1,000,000.
//
// Over a span For, such an instance reserves at most what it issued in the
// span plus what it held unissued at its end, the current segment and the
// prefetched next one: the estimate is
//
//	max(MaxStep, row step) × (⌈For / 15min⌉ + 2) × Instances
//
// which is never below two of the row's steps. It errs high: a tag at a
// tenth of the cap's rate gets ten times what it needed, which costs
// numbers and nothing else. It errs low only for a tag that ran faster
// than Instances × MaxStep per 15 minutes (an instance at the cap whose
// segments still last under 15 minutes): for those give -by a count from
// idalloc_ids_issued_total instead.
type Estimate struct {
	// For is the span of the lost history: from when the restored data
	// was taken (the backup, or the last transaction the promoted replica
	// applied) until the last instance that ran on the lost writes stopped.
	For time.Duration
	// MaxStep is the instances' segment.max_step.
	MaxStep int64
	// Instances is how many instances served the tags meanwhile.
	Instances int
}

// Segments is how many cap-sized segments the estimate allows each
// instance: ⌈For / segment.TargetDuration⌉ + 2.
func (e Estimate) Segments() int64 {
	n := int64(e.For / segment.TargetDuration)
	if e.For%segment.TargetDuration != 0 {
		n++
	}
	return n + 2
}

// errEstimateTooLarge: the estimate passes every max_id an int64 holds.
var errEstimateTooLarge = errors.New("the estimate passes the largest max_id: give -by a count instead")

// By returns how far to move a tag whose row's step is step.
func (e Estimate) By(step int64) (int64, error) {
	by, ok := mul(max(e.MaxStep, step), e.Segments())
	if ok {
		by, ok = mul(by, int64(e.Instances))
	}
	if !ok {
		return 0, errEstimateTooLarge
	}
	return by, nil
}

// ByPeriod returns how far to move the counter of one period, lasting
// length, of a dated tag whose row's step is step and whose periods have
// numbers numbers each. It is By with a dated tag's own cap on the
// adaptive step, 1/100 of a period's numbers (unless the row's step is
// larger), and the span cut to the period's length, since an instance
// fetches a period's ranges only while it lasts (its first range a
// little before, one of the + 2). Sized by the whole span's rate, it errs
// high as By does, which spends numbers of the period and nothing else.
func (e Estimate) ByPeriod(step, numbers int64, length time.Duration) (int64, error) {
	capped := max(min(e.MaxStep, max(1, numbers/datedStepShare)), step)
	by, ok := mul(capped, Estimate{For: min(e.For, length)}.Segments())
	if ok {
		by, ok = mul(by, int64(e.Instances))
	}
	if !ok {
		return 0, errEstimateTooLarge
	}
	return by, nil
}

// DatedString says how the estimate is made for dated tags' periods.
func (e Estimate) DatedString() string {
	return fmt.Sprintf("estimate for dated tags: each period moves by max(min(segment.max_step %d, 1/%d of a period's numbers), "+
		"its step) × (%s, or the period's length if shorter, in %s segments, rounded up, + 2) × %d instance(s)",
		e.MaxStep, datedStepShare, e.For, segment.TargetDuration, e.Instances)
}

// String says how the estimate is made, for the command's output.
func (e Estimate) String() string {
	return fmt.Sprintf("estimate for %s: each tag moves by max(segment.max_step %d, its step) × %d "+
		"(%s in %s segments, rounded up, + 2 held at the end) × %d instance(s)",
		e.For, e.MaxStep, e.Segments(), e.For, segment.TargetDuration, e.Instances)
}

// check refuses an estimate that cannot be made.
func (e Estimate) check() error {
	switch {
	case e.For <= 0:
		return fmt.Errorf("-for %s must be positive", e.For)
	case e.MaxStep < 1:
		return fmt.Errorf("segment.max_step %d must be at least 1", e.MaxStep)
	case e.Instances < 1:
		return fmt.Errorf("-instances %d must be at least 1", e.Instances)
	}
	return nil
}

// mul multiplies two non-negative numbers, reporting false when the
// product passes math.MaxInt64.
func mul(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}
