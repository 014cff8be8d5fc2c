package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// Duration is the value of a duration key: a Go duration string ("5s",
// "1m30s") in config.json and in its variable. It keeps the text as
// written, which -print-config shows, and the duration it reads as. A
// text that is no duration is kept too, for Validate to refuse naming its
// key. A key's minimum is its field's min tag (`min:"1s"`; none is 0).
type Duration struct {
	text string
	d    time.Duration
	ok   bool // text is a duration
}

// durationOf is the Duration written text.
func durationOf(text string) Duration {
	var d Duration
	_ = d.Set(text) // Set keeps a bad text for Validate
	return d
}

// Duration is the duration d reads as (0 for a text that is none, which
// Validate refuses).
func (d Duration) Duration() time.Duration { return d.d }

// String is d's text as written.
func (d Duration) String() string { return d.text }

// Set makes d the duration written s. It never fails: a text that is no
// duration is Validate's to refuse, naming its key. Set and String make
// *Duration a flag.Value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	*d = Duration{text: s, d: v, ok: err == nil}
	return nil
}

// UnmarshalText reads an IDALLOC_* variable's value, as Set.
func (d *Duration) UnmarshalText(b []byte) error { return d.Set(string(b)) }

// MarshalJSON writes d's text as a JSON string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.text) }

// UnmarshalJSON reads a JSON string, as Set; null leaves d as it is.
// Another JSON value is encoding/json's error of a string field, which
// the decoder names with its key.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return d.Set(s)
}

// check refuses d for key when its text is no duration or it is below min.
func (d Duration) check(key string, min time.Duration) error {
	switch {
	case !d.ok:
		return keyErr(key, "%q is not a duration like \"5s\"", d.text)
	case d.d < min:
		return keyErr(key, "%s is below the minimum %s", d.d, min)
	}
	return nil
}

// durationType is Duration's type: a key, not an object of keys, though a
// struct.
var durationType = reflect.TypeFor[Duration]()

// isObject reports whether a field of type t is an object of keys.
func isObject(t reflect.Type) bool { return t.Kind() == reflect.Struct && t != durationType }

// durationKey is a duration key and its minimum, its field's min tag.
type durationKey struct {
	EnvVar
	min time.Duration
}

// durationKeys are the duration keys, in Config's order.
var durationKeys = durationKeysOf(envVars)

func durationKeysOf(vars []EnvVar) []durationKey {
	var out []durationKey
	for _, e := range vars {
		if e.typ != durationType {
			continue
		}
		k := durationKey{EnvVar: e}
		if tag := reflect.TypeFor[Config]().FieldByIndex(e.field).Tag.Get("min"); tag != "" {
			var err error
			if k.min, err = time.ParseDuration(tag); err != nil { // a tag, not input: any test finds it
				panic(fmt.Sprintf("config: key %q: min tag %q: %v", e.Key, tag, err))
			}
		}
		out = append(out, k)
	}
	return out
}

// checkDurations refuses the first duration key of c, in Config's order,
// whose text is no duration or whose value is below its minimum.
func checkDurations(c Config) error {
	cv := reflect.ValueOf(c)
	for _, k := range durationKeys {
		if err := cv.FieldByIndex(k.field).Interface().(Duration).check(k.Key, k.min); err != nil {
			return err
		}
	}
	return nil
}
