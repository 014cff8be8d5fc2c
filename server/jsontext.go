package server

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonText reports whether raw, a JSON string as sent (quotes included)
// that encoding/json has accepted, holds text: its bytes are UTF-8 and
// every \u escape of a surrogate is the first half of a pair followed by
// its second. encoding/json decodes anything else to U+FFFD without a
// word, so a field checked after decoding would be stored with
// replacement characters the client never sent, rather than refused as
// it is over RESP, which reads the bytes themselves.
func jsonText(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character: one byte, or u and four hex digits
		if i == len(raw) || raw[i] != 'u' {
			continue
		}
		r1, ok := hex4(raw, i+1)
		if !ok {
			return false
		}
		i += 4
		if !utf16.IsSurrogate(r1) {
			continue
		}
		if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
			return false
		}
		r2, ok := hex4(raw, i+3)
		if !ok || utf16.DecodeRune(r1, r2) == unicode.ReplacementChar {
			return false
		}
		i += 6
	}
	return true
}

// hex4 reads the four hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return rune(n), err == nil
}
