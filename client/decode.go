package client

import (
	"bytes"
	"encoding/json"
	"errors"
)

// okPrefix opens every success body the server writes itself.
var okPrefix = []byte(`{"resp_code":0,"msg":"success"`)

var errNoIDs = errors.New("success answer without ids")

// appendIDs appends the IDs of a success answer of /alloc or /snowflake:
// its "ids", or its "id" when it has no "ids". Bodies in the server's own
// form (okPrefix, then "key":value pairs of integers, strings and arrays of
// them) are read by a small scanner, which costs a few nanoseconds per ID
// where encoding/json costs tens; anything else, such as the same JSON
// re-encoded by a proxy, is decoded by encoding/json.
func appendIDs(dst []int64, body []byte) ([]int64, error) {
	if out, ok := scanIDs(dst, body); ok {
		return out, nil
	}
	var v struct {
		ID  *int64  `json:"id"`
		IDs []int64 `json:"ids"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return dst, err
	}
	switch {
	case len(v.IDs) > 0:
		return append(dst, v.IDs...), nil
	case v.ID != nil:
		return append(dst, *v.ID), nil
	}
	return dst, errNoIDs
}

// scanIDs reads body in the server's own form. ok is false, and dst is
// returned unchanged, at the first byte it does not expect.
func scanIDs(dst []int64, body []byte) (_ []int64, ok bool) {
	s := bytes.TrimRight(body, " \r\n")
	if !bytes.HasPrefix(s, okPrefix) || len(s) == 0 || s[len(s)-1] != '}' {
		return dst, false
	}
	s = s[len(okPrefix) : len(s)-1]
	n0 := len(dst)
	var single int64
	haveSingle, haveIDs := false, false
	for len(s) > 0 {
		var key []byte
		if key, s, ok = scanKey(s); !ok {
			return dst[:n0], false
		}
		switch string(key) {
		case "id":
			if single, s, ok = scanInt(s); !ok {
				return dst[:n0], false
			}
			haveSingle = true
		case "ids":
			if haveIDs || len(s) == 0 || s[0] != '[' {
				return dst[:n0], false
			}
			s = s[1:]
			for len(s) > 0 && s[0] != ']' {
				var id int64
				if id, s, ok = scanInt(s); !ok {
					return dst[:n0], false
				}
				dst = append(dst, id)
				if s, ok = separator(s); !ok {
					return dst[:n0], false
				}
			}
			if len(s) == 0 {
				return dst[:n0], false
			}
			s = s[1:]
			haveIDs = true
		default:
			// id_str, ids_str: strings of digits, or arrays of them.
			if s, ok = skipStrings(s); !ok {
				return dst[:n0], false
			}
		}
	}
	switch {
	case haveIDs && len(dst) > n0:
		return dst, true
	case !haveIDs && haveSingle:
		return append(dst, single), true
	}
	return dst[:n0], false
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
