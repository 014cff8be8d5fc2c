package main

import (
	"errors"
	"fmt"
	"strconv"
)

// response is what one body says, as far as idload cares. parseBody fills it
// in place: ids and idsStr keep their backing arrays from one response to
// the next, so the hot loop does not allocate.
type response struct {
	respCode   int64
	hasCode    bool
	id         int64
	hasID      bool
	idStr      int64 // "id_str", parsed as a number
	hasIDStr   bool
	ids        []int64
	hasIDs     bool
	idsStr     []int64 // "ids_str", each parsed as a number
	hasIDsStr  bool
	msgPresent bool
}

func (r *response) reset() {
	*r = response{ids: r.ids[:0], idsStr: r.idsStr[:0]}
}

// maxDepth bounds the nesting parseBody skips through in fields it ignores.
const maxDepth = 64

var errNotInteger = errors.New("not an integer")

// parseBody reads a response envelope without encoding/json: one pass over
// the bytes, no reflection, no allocation once r's slices have grown. It is
// a real (if small) JSON parser, not a substring search: keys are matched
// only at the top level of the object, so an "id": inside a msg string or a
// nested object is not mistaken for the ID, and malformed JSON is an error.
// Fields other than resp_code, msg, id, id_str, ids and ids_str are checked
// for well-formedness and skipped. A repeated key keeps its last value, as
// encoding/json does.
func parseBody(b []byte, r *response) error {
	r.reset()
	p := parser{b: b}
	p.ws()
	if !p.eat('{') {
		return p.errorf("want '{'")
	}
	p.ws()
	if p.eat('}') {
		return p.end()
	}
	for {
		p.ws()
		key, escaped, err := p.rawString()
		if err != nil {
			return err
		}
		if escaped {
			// Keys are plain ASCII in practice; an escaped one is unquoted
			// the slow way so that "i\u0064" still means "id".
			u, err := strconv.Unquote(`"` + string(key) + `"`)
			if err != nil {
				return p.errorf("bad key escape")
			}
			key = []byte(u)
		}
		p.ws()
		if !p.eat(':') {
			return p.errorf("want ':' after key")
		}
		p.ws()
		switch string(key) { // no allocation: the compiler compares in place
		case "resp_code":
			r.respCode, err = p.int64()
			r.hasCode = true
		case "id":
			r.id, err = p.int64()
			r.hasID = true
		case "id_str":
			r.idStr, err = p.intString()
			r.hasIDStr = true
		case "ids":
			r.ids, err = p.intArray(r.ids[:0], false)
			r.hasIDs = true
		case "ids_str":
			r.idsStr, err = p.intArray(r.idsStr[:0], true)
			r.hasIDsStr = true
		case "msg":
			r.msgPresent = true
			err = p.skipValue(0)
		default:
			err = p.skipValue(0)
		}
		if err != nil {
			if errors.Is(err, errNotInteger) {
				return fmt.Errorf("field %q: %w", key, err)
			}
			return err
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return p.end()
		}
		return p.errorf("want ',' or '}'")
	}
}

type parser struct {
	b []byte
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("malformed JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end accepts only trailing whitespace after the object.
func (p *parser) end() error {
	p.ws()
	if p.i != len(p.b) {
		return p.errorf("trailing data after the object")
	}
	return nil
}

// rawString reads a string and returns its raw contents (escapes not
// decoded) and whether it holds any escape.
func (p *parser) rawString() ([]byte, bool, error) {
	if !p.eat('"') {
		return nil, false, p.errorf("want a string")
	}
	start, escaped := p.i, false
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, escaped, nil
		case c == '\\':
			escaped = true
			if p.i+1 >= len(p.b) {
				return nil, false, p.errorf("unterminated string")
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.b) || !isHex4(p.b[p.i+2:p.i+6]) {
					return nil, false, p.errorf("bad \\u escape")
				}
				p.i += 6
			default:
				return nil, false, p.errorf("bad escape")
			}
		case c < 0x20:
			return nil, false, p.errorf("control character in string")
		default:
			p.i++
		}
	}
	return nil, false, p.errorf("unterminated string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// int64 reads a JSON number that must be an integer in int64's range.
func (p *parser) int64() (int64, error) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	switch {
	case p.i == digits:
		return 0, p.errorf("want a number")
	case p.b[digits] == '0' && p.i-digits > 1:
		return 0, p.errorf("leading zero")
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, errNotInteger
		}
	}
	return parseInt(p.b[start:p.i])
}

// parseInt converts an optionally signed run of decimal digits, checking
// overflow, without strconv's string conversion.
func parseInt(s []byte) (int64, error) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 {
		return 0, errNotInteger
	}
	var u uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errNotInteger
		}
		u = u*10 + uint64(c-'0') // 19 digits cannot overflow uint64
	}
	switch {
	case !neg && u > 1<<63-1, neg && u > 1<<63:
		return 0, errNotInteger
	case neg:
		return -int64(u), nil
	}
	return int64(u), nil
}

// intString reads a JSON string holding a decimal integer, as "id_str" does.
func (p *parser) intString() (int64, error) {
	s, escaped, err := p.rawString()
	if err != nil {
		return 0, err
	}
	if escaped || (len(s) > 1 && s[0] == '0') {
		return 0, errNotInteger
	}
	return parseInt(s)
}

// intArray appends an array of integers (or, with strs, of strings holding
// integers) to dst.
func (p *parser) intArray(dst []int64, strs bool) ([]int64, error) {
	if !p.eat('[') {
		return dst, p.errorf("want '['")
	}
	p.ws()
	if p.eat(']') {
		return dst, nil
	}
	for {
		p.ws()
		var v int64
		var err error
		if strs {
			v, err = p.intString()
		} else {
			v, err = p.int64()
		}
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat(']') {
			return dst, nil
		}
		return dst, p.errorf("want ',' or ']'")
	}
}

// skipValue checks and skips any JSON value.
func (p *parser) skipValue(depth int) error {
	if depth > maxDepth {
		return p.errorf("nested too deep")
	}
	if p.i >= len(p.b) {
		return p.errorf("want a value")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, _, err := p.rawString()
		return err
	case c == '{':
		p.i++
		p.ws()
		if p.eat('}') {
			return nil
		}
		for {
			p.ws()
			if _, _, err := p.rawString(); err != nil {
				return err
			}
			p.ws()
			if !p.eat(':') {
				return p.errorf("want ':'")
			}
			p.ws()
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				return nil
			}
			return p.errorf("want ',' or '}'")
		}
	case c == '[':
		p.i++
		p.ws()
		if p.eat(']') {
			return nil
		}
		for {
			p.ws()
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(']') {
				return nil
			}
			return p.errorf("want ',' or ']'")
		}
	case c == '-' || '0' <= c && c <= '9':
		return p.skipNumber()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
				p.i += len(lit)
				return nil
			}
		}
		return p.errorf("want a value")
	}
}

// skipNumber follows JSON's number grammar.
func (p *parser) skipNumber() error {
	p.eat('-')
	d := p.digits()
	if d == 0 {
		return p.errorf("want digits")
	}
	if p.eat('.') && p.digits() == 0 {
		return p.errorf("want digits after '.'")
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if p.digits() == 0 {
			return p.errorf("want exponent digits")
		}
	}
	return nil
}

func (p *parser) digits() int {
	start := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
