package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// keyError is a config error about one key. It is typed, not only worded,
// so that Load can say where the key's value came from (a file, an
// environment variable) without reading the message.
type keyError struct {
	key string // dotted, as in config.json: "segment.max_step"
	err error
}

func (e *keyError) Error() string { return fmt.Sprintf("key %q: %v", e.key, e.err) }
func (e *keyError) Unwrap() error { return e.err }

// keyErr is fmt.Errorf (with %w) for a message about key.
func keyErr(key, format string, args ...any) error {
	return &keyError{key: key, err: fmt.Errorf(format, args...)}
}

// sources records where the config's values came from: the file at path
// (empty when the defaults were validated without Load), whether it was
// there to read and the keys it set, and, by key, the environment variable
// that replaced it.
type sources struct {
	path string
	read bool
	file map[string]bool
	env  map[string]string
}

// origin names where key's value came from, to head an error about it. The
// value itself is left out: dsn and admin_token hold secrets.
func (s sources) origin(key string) string {
	switch {
	case s.env[key] != "":
		return fmt.Sprintf("%s (key %q)", s.env[key], key)
	case s.path != "":
		return fmt.Sprintf("config %s: key %q", s.path, key)
	}
	return fmt.Sprintf("key %q", key)
}

// blame heads err with the origin of the key it is about.
func (s sources) blame(err error) error {
	var ke *keyError
	if !errors.As(err, &ke) {
		return fmt.Errorf("config %s: %w", s.path, err)
	}
	return fmt.Errorf("%s: %w", s.origin(ke.key), ke.err)
}

// jsonError rewords a decoding error of config.json: a syntax error with
// the line and column (encoding/json gives only a byte offset), a value of
// the wrong type as the key and the kinds wanted and given, in words
// rather than Go types ("want an integer", not "want a int").
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s: %w", position(data, se.Offset), err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: unexpected EOF: the JSON ends inside an object or a string", position(data, int64(len(data))+1))
	case errors.As(err, &te) && te.Field == "":
		return fmt.Errorf("want a JSON object, got %s", jsonValue(te.Value))
	case errors.As(err, &te):
		return keyErr(te.Field, "want %s, got %s", goType(te.Type), jsonValue(te.Value))
	}
	return err
}

// position is the line and column (both from 1, the column in bytes) of
// the byte at fault in data, where offset counts the bytes read up to and
// including it, as encoding/json's SyntaxError.Offset does; past the end,
// the place just after the last byte.
func position(data []byte, offset int64) string {
	before := data[:min(max(offset-1, 0), int64(len(data)))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// goType says in words what a JSON value must be to fit a field of type t.
func goType(t reflect.Type) string {
	if t == durationType {
		return "a string" // a Go duration string
	}
	switch t.Kind() {
	case reflect.Pointer:
		return goType(t.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return t.String()
}

// jsonValue says in words what encoding/json's UnmarshalTypeError.Value
// describes: "string", "bool", "array", "object", "number", or "number 1.5"
// for a number that does not fit.
func jsonValue(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	switch v {
	case "bool":
		return "true or false"
	case "array", "object":
		return "an " + v
	}
	return "a " + v
}
