package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// okPrefix opens every success body the server writes itself.
var okPrefix = []byte(`{"resp_code":0,"msg":"success"`)

var (
	errNoIDs    = errors.New("success answer without ids")
	errMixed    = errors.New("success answer with both ranges and a list of ids")
	errBadRange = errors.New("success answer with a range that is not [first,last]")
	errSpans    = errors.New("success answer whose ranges are not non-negative, increasing and disjoint")
)

// span is the IDs first, first+1, …, last of a ranges answer.
type span struct{ first, last int64 }

// count is how many IDs s holds; checkSpans has made sure it fits.
func (s span) count() int64 { return s.last - s.first + 1 }

// spansHold checks that spans hold n IDs, as an answer to count=n must.
func spansHold(spans []span, n int) error {
	var total int64
	for _, s := range spans {
		if s.count() > int64(n)-total {
			return fmt.Errorf("success answer with more than the %d IDs asked for", n)
		}
		total += s.count()
	}
	if total != int64(n) {
		return fmt.Errorf("success answer with %d IDs, %d asked for", total, n)
	}
	return nil
}

// checkSpans refuses ranges the server never sends: none at all, or any
// that are not [first,last] with 0 ≤ first ≤ last, each beginning above
// the one before ends. Strictly increasing and disjoint is what lets the
// client serve them in order, each ID once; non-negative keeps every
// count within int64 (spansHold checks their total against the count
// asked for).
func checkSpans(spans []span) error {
	if len(spans) == 0 {
		return errNoIDs
	}
	prev := int64(-1)
	for _, s := range spans {
		if s.first <= prev || s.last < s.first {
			return errSpans
		}
		if s.first == 0 && s.last == 1<<63-1 {
			return errSpans // one more than int64 holds
		}
		prev = s.last
	}
	return nil
}

// decoded is a success answer of /alloc or /snowflake: its IDs, as
// spans ("ranges", an answer to as=ranges), as numbers ("ids", or "id"
// alone) or, when it has neither, as text ("ids_str", or "id_str" alone:
// a dated tag with a prefix or a separator, docs/api.md §11); and what it says
// of a dated tag's period.
type decoded struct {
	spans []span // nil unless the answer has "ranges"; ids and strs are then empty
	ids   []int64
	strs  []string // nil when ids holds the IDs
	// dated: the answer has id_str or ids_str, which /alloc sends for
	// dated tags only (and /snowflake for every answer), or endsIn.
	dated bool
	// endsIn is the answer's period_ends_in_ms: how long after the
	// instance answered the period of its IDs ends; -1 when absent.
	endsIn time.Duration
	inst   *instance // the instance that answered, set by the caller
}

// appendIDs appends the numeric IDs of a success answer of /alloc or
// /snowflake to dst: its "ids", or its "id" when it has no "ids". An
// answer of text IDs only, or of ranges, is errNoIDs.
func appendIDs(dst []int64, body []byte) ([]int64, error) {
	d, err := decode(dst, body)
	if err == nil && (d.strs != nil || d.spans != nil) {
		return dst, errNoIDs
	}
	return d.ids, err
}

// decode reads a success answer, appending its numeric IDs to dst. Bodies
// in the server's own form (okPrefix, then "key":value pairs of integers,
// strings and arrays of them) are read by a small scanner, which costs a
// few nanoseconds per ID where encoding/json costs tens; anything else,
// such as the same JSON re-encoded by a proxy, is decoded by
// encoding/json.
func decode(dst []int64, body []byte) (decoded, error) {
	if d, ok := scan(dst, body); ok {
		return d, nil
	}
	var v struct {
		Ranges [][]int64 `json:"ranges"`
		ID     *int64    `json:"id"`
		IDs    []int64   `json:"ids"`
		IDStr  *string   `json:"id_str"`
		IDsStr []string  `json:"ids_str"`
		EndsIn *int64    `json:"period_ends_in_ms"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return decoded{ids: dst}, err
	}
	d := decoded{ids: dst, dated: v.IDStr != nil || v.IDsStr != nil || v.EndsIn != nil, endsIn: -1}
	if v.EndsIn != nil {
		d.endsIn = max(time.Duration(*v.EndsIn), 0) * time.Millisecond
	}
	switch {
	case v.Ranges != nil:
		if d.dated || v.ID != nil || v.IDs != nil || v.IDsStr != nil {
			return d, errMixed
		}
		spans := make([]span, 0, len(v.Ranges))
		for _, r := range v.Ranges {
			if len(r) != 2 {
				return d, errBadRange
			}
			spans = append(spans, span{r[0], r[1]})
		}
		if err := checkSpans(spans); err != nil {
			return d, err
		}
		d.spans = spans
	case len(v.IDs) > 0:
		d.ids = append(dst, v.IDs...)
	case v.ID != nil:
		d.ids = append(dst, *v.ID)
	case len(v.IDsStr) > 0:
		d.strs = v.IDsStr
	case v.IDStr != nil:
		d.strs = []string{*v.IDStr}
	default:
		return d, errNoIDs
	}
	return d, nil
}

// scan reads body in the server's own form. ok is false, and the IDs
// are dst unchanged, at the first byte it does not expect. Text IDs are
// made only for an answer without numeric ones, as substrings of one
// string: one allocation for the batch.
func scan(dst []int64, body []byte) (d decoded, ok bool) {
	d = decoded{ids: dst, endsIn: -1}
	s := bytes.TrimRight(body, " \r\n")
	if !bytes.HasPrefix(s, okPrefix) || len(s) == 0 || s[len(s)-1] != '}' {
		return d, false
	}
	s = s[len(okPrefix) : len(s)-1]
	n0 := len(dst)
	var single int64
	var oneStr, strs []byte // the value of id_str; the array of ids_str
	haveSingle, haveIDs := false, false
	var spans []span
	fail := func() (decoded, bool) { return decoded{ids: dst[:n0], endsIn: -1}, false }
	for len(s) > 0 {
		var key []byte
		if key, s, ok = scanKey(s); !ok {
			return fail()
		}
		switch string(key) {
		case "id":
			if single, s, ok = scanInt(s); !ok {
				return fail()
			}
			haveSingle = true
		case "ids":
			if haveIDs || len(s) == 0 || s[0] != '[' {
				return fail()
			}
			s = s[1:]
			for len(s) > 0 && s[0] != ']' {
				var id int64
				if id, s, ok = scanInt(s); !ok {
					return fail()
				}
				dst = append(dst, id)
				if s, ok = separator(s); !ok {
					return fail()
				}
			}
			if len(s) == 0 {
				return fail()
			}
			s = s[1:]
			haveIDs = true
		case "ranges":
			if spans != nil {
				return fail()
			}
			if spans, s, ok = scanSpans(s); !ok {
				return fail()
			}
		case "period_ends_in_ms":
			var ms int64
			if ms, s, ok = scanInt(s); !ok {
				return fail()
			}
			d.endsIn, d.dated = max(time.Duration(ms), 0)*time.Millisecond, true
		default:
			// id_str, ids_str: strings of digits or text IDs, or arrays
			// of them; other string fields.
			rest, ok := skipStrings(s)
			if !ok {
				return fail()
			}
			switch string(key) {
			case "id_str":
				oneStr, d.dated = s[:len(s)-len(rest)], true
			case "ids_str":
				strs, d.dated = s[:len(s)-len(rest)], true
			}
			s = rest
		}
	}
	d.ids = dst
	switch {
	case spans != nil:
		// Only alone: an answer that also lists IDs is not the server's.
		if haveIDs || haveSingle || d.dated || checkSpans(spans) != nil {
			return fail()
		}
		d.spans = spans
	case haveIDs && len(dst) > n0:
	case !haveIDs && haveSingle:
		d.ids = append(dst, single)
	case !haveIDs && len(strs) > 2:
		d.strs = splitStrings(string(strs))
	case !haveIDs && len(oneStr) >= 2 && oneStr[0] == '"':
		d.strs = []string{string(oneStr[1 : len(oneStr)-1])}
	default:
		return fail()
	}
	return d, true
}

// scanSpans reads the array of ranges, [[first,last],…]; its rules are
// checkSpans's, applied by the caller.
func scanSpans(s []byte) ([]span, []byte, bool) {
	if len(s) < 2 || s[0] != '[' {
		return nil, s, false
	}
	s = s[1:]
	spans := make([]span, 0, 2)
	for len(s) > 0 && s[0] != ']' {
		var sp span
		var ok bool
		if len(s) == 0 || s[0] != '[' {
			return nil, s, false
		}
		if sp.first, s, ok = scanInt(s[1:]); !ok || len(s) == 0 || s[0] != ',' {
			return nil, s, false
		}
		if sp.last, s, ok = scanInt(s[1:]); !ok || len(s) == 0 || s[0] != ']' {
			return nil, s, false
		}
		spans = append(spans, sp)
		if s, ok = separator(s[1:]); !ok {
			return nil, s, false
		}
	}
	if len(s) == 0 {
		return nil, s, false
	}
	return spans, s[1:], true
}

// splitStrings splits a JSON array of strings without escapes, checked by
// skipStrings, into its elements, substrings of a.
func splitStrings(a string) []string {
	a = a[1 : len(a)-1] // the brackets
	out := make([]string, 0, strings.Count(a, ",")+1)
	for a != "" {
		end := strings.IndexByte(a[1:], '"') + 1
		out = append(out, a[1:end])
		a = a[min(end+2, len(a)):] // the closing quote and a comma
	}
	return out
}

// scanKey reads `,"key":`.
func scanKey(s []byte) (key, rest []byte, ok bool) {
	if len(s) < 4 || s[0] != ',' || s[1] != '"' {
		return nil, s, false
	}
	end := bytes.IndexByte(s[2:], '"')
	if end < 0 || len(s) < end+4 || s[end+3] != ':' {
		return nil, s, false
	}
	return s[2 : 2+end], s[end+4:], true
}

// scanInt reads a JSON integer that fits int64, in digits alone (with an
// optional minus sign), as the server writes them.
func scanInt(s []byte) (int64, []byte, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	i := 0
	var v uint64
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		if i >= 19 { // more digits than any int64 has
			return 0, s, false
		}
		v = v*10 + uint64(s[i]-'0')
	}
	if i == 0 || (i > 1 && s[0] == '0') || v > 1<<63-1 {
		return 0, s, false
	}
	if neg {
		return -int64(v), s[i:], true
	}
	return int64(v), s[i:], true
}

// skipStrings skips a string without escapes, or an array of them.
func skipStrings(s []byte) ([]byte, bool) {
	str := func(s []byte) ([]byte, bool) {
		if len(s) == 0 || s[0] != '"' {
			return s, false
		}
		end := bytes.IndexByte(s[1:], '"')
		if end < 0 || bytes.IndexByte(s[1:1+end], '\\') >= 0 {
			return s, false
		}
		return s[end+2:], true
	}
	if len(s) == 0 || s[0] != '[' {
		return str(s)
	}
	s = s[1:]
	for len(s) > 0 && s[0] != ']' {
		var ok bool
		if s, ok = str(s); !ok {
			return s, false
		}
		if s, ok = separator(s); !ok {
			return s, false
		}
	}
	if len(s) == 0 {
		return s, false
	}
	return s[1:], true
}

// separator reads what follows an array element: a comma before the next
// element, or the closing bracket (left in place).
func separator(s []byte) ([]byte, bool) {
	switch {
	case len(s) > 1 && s[0] == ',' && s[1] != ']':
		return s[1:], true
	case len(s) > 0 && s[0] == ']':
		return s, true
	}
	return s, false
}
