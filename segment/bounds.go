package segment

import "time"

// TargetDuration is how long a segment should last, Leaf's
// SEGMENT_DURATION: the adaptive step doubles after a segment used up in
// less, and halves after one that lasted twice as long. So an instance
// whose step is below its cap issues at most one step per TargetDuration
// on a tag, which is what idalloc advance sizes its estimate by.
const TargetDuration = 15 * time.Minute

// LastNumber returns the highest sequence number (a max_id) t's format has
// an ID for: MaxUsableID for sequential, 10^length − 1 for fixed_length,
// 9·10^(length−1) for scrambled. A max_id moved past it leaves the tag
// exhausted. For dated it is the last sequence number of each period,
// 10^length − 1, which the per-period counters stop at (the segments
// row's max_id counts nothing for a dated tag). Errors as CheckFormat.
func LastNumber(t Tag) (int64, error) {
	f, err := formatOf(t)
	if err != nil {
		return 0, err
	}
	return f.limit, nil
}
