package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/idalloc/idalloc/segment"
)

var errMissingTag = missingParam("app_tag")

// tagParam reads the app_tag parameter; absent or empty, it is missing. Its
// rules are the allocator's: an invalid tag misses the allocator's tag map
// and is refused there (segment.ErrInvalidTag) before it reaches a store,
// log or metric label, so checking it here as well would only repeat the
// check on every request.
func tagParam(raw string) (string, error) {
	tag, found, err := queryParam(raw, "app_tag")
	switch {
	case err != nil:
		return "", err
	case !found || tag == "":
		return "", errMissingTag
	}
	return tag, nil
}

// queryParam returns the value of key in a raw query without building the
// map url.Values would: the hot paths read one or two parameters, and the
// raw value is returned as a substring. Only a key or value holding '%' or
// '+' is unescaped. A value that does not unescape is a bad request naming
// key, and so is a key given twice, even with one value: url.Values.Get
// reads the first, other parsers the last, and a proxy or a log must never
// read another request from the one we serve (docs/api.md §2).
func queryParam(raw, key string) (value string, found bool, err error) {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(pair, "=")
		if k != key {
			if !escaped(k) {
				continue
			}
			if uk, err := url.QueryUnescape(k); err != nil || uk != key {
				continue
			}
		}
		if found {
			return "", true, badParam(key, "given more than once: send it once")
		}
		value, found = v, true
	}
	if escaped(value) {
		if value, err = url.QueryUnescape(value); err != nil {
			return "", true, badParam(key, "bad percent-encoding")
		}
	}
	return value, found, nil
}

// escaped is a plain loop: strings.ContainsAny builds a set per call, which
// cost more than the rest of the query parsing.
func escaped(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '+' {
			return true
		}
	}
	return false
}

// spelledOddly reports whether s, a number as a client wrote it, starts
// as no number this service writes does: with a sign, a space ('+' in a
// query string reads as one), or a zero followed by more ("007", "0x10").
// strconv takes "+5" and "007", and an ID or count that a cache, proxy or
// log keys by its text must have one spelling, so these are refused with
// words that say why; what strconv refuses anyway keeps its own answer.
func spelledOddly(s string) bool {
	return s != "" && (s[0] == '+' || s[0] == ' ' || (s[0] == '0' && len(s) > 1))
}

var errCountSpelling = badParam("count", "write it in decimal digits alone, without a sign, spaces or leading zeros ('+' in a query string also reads as a space)")

// countParam reads the optional count of a batch: absent is 0, otherwise an
// integer in decimal digits alone, which limit (the domain's rule and
// words) must allow.
func countParam(raw string, limit segment.CountLimit) (int, error) {
	v, found, err := queryParam(raw, "count")
	if !found || err != nil {
		return 0, err
	}
	if spelledOddly(v) {
		return 0, errCountSpelling
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, limit.Err()
	}
	if err := limit.Check(n); err != nil {
		return 0, err
	}
	return n, nil
}

// maxBodyBytes bounds a POST body; the largest legitimate one is a few
// hundred bytes. POST /tags with an array has its own bound
// (maxBulkBodyBytes).
const maxBodyBytes = 64 << 10

// object is a JSON object body by field. Decoding into a map rather than a
// struct lets every error name its field, unknown fields included, and tells
// a missing field from a zero one.
type object map[string]json.RawMessage

// readObject reads a JSON object body holding only the given fields. An
// empty body is an empty object; callers decide what is required. Unknown
// fields are refused, because a misspelt optional field (say
// "last_timestamp") would otherwise be silently dropped.
func readObject(w http.ResponseWriter, r *http.Request, fields ...string) (object, error) {
	data, err := readBody(w, r, maxBodyBytes)
	if err != nil {
		return nil, err
	}
	return parseObject(data, fields...)
}

// readBody reads a request body of at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, errBodyTooLarge(limit)
		}
		return nil, badParam("body", "could not be read")
	}
	return data, nil
}

// errBodyTooLarge refuses a body above limit bytes, a whole number of
// KiB or MiB.
func errBodyTooLarge(limit int64) error {
	size := strconv.FormatInt(limit>>10, 10) + " KiB"
	if limit >= 1<<20 {
		size = strconv.FormatInt(limit>>20, 10) + " MiB"
	}
	return badParam("body", "larger than "+size)
}

// parseObject reads data as readObject reads a body.
func parseObject(data []byte, fields ...string) (object, error) {
	if strings.TrimSpace(string(data)) == "" {
		return object{}, nil
	}
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, badParam("body", "want a JSON object")
	}
	for k := range o {
		if !slices.Contains(fields, k) {
			if segment.ValidTag(k) { // safe to quote back
				return nil, badParam("body", "unknown field "+strconv.Quote(k))
			}
			return nil, badParam("body", "unknown field")
		}
	}
	// Every key is now one of fields, so it is safe to quote back.
	if k, ok := duplicateKey(data); ok {
		return nil, badParam("body", "field "+strconv.Quote(k)+" given twice: send each field once")
	}
	return o, nil
}

// duplicateKey returns the first top-level key that data, a JSON object,
// repeats. encoding/json keeps the last of them, while a proxy, a WAF or a
// log may read the first: the body would then create or renew something
// other than what they saw. Keys compare after unescaping, so "app\u005ftag"
// repeats "app_tag", as it would overwrite it.
func duplicateKey(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return "", false
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		k, _ := tok.(string)
		if seen[k] {
			return k, true
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// int64 reads an integer field; present is false when it is absent or null.
func (o object) int64(field string) (v int64, present bool, err error) {
	raw, ok := o[field]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, true, badParam(field, "want an integer")
	}
	return v, true, nil
}

// string reads a string field; present is false when it is absent or null.
func (o object) string(field string) (v string, present bool, err error) {
	raw, ok := o[field]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", true, badParam(field, "want a string")
	}
	return v, true, nil
}

// strings reads an array-of-strings field; present is false when it is
// absent or null.
func (o object) strings(field string) (v []string, present bool, err error) {
	raw, ok := o[field]
	if !ok || string(raw) == "null" {
		return nil, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, true, badParam(field, "want an array of strings")
	}
	return v, true, nil
}
