package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// docAnswer is what an example shows it answers.
type docAnswer struct {
	status    int    // 0: not shown
	body      any    // a whole JSON body, or nil
	text      string // a whole text answer (a number), or ""
	fragments []string
}

var (
	statusPrefix = regexp.MustCompile(`^([1-5][0-9][0-9]) `)
	digits       = regexp.MustCompile(`^[0-9]+$`)
)

func parseAnswer(a string) docAnswer {
	var w docAnswer
	if m := statusPrefix.FindStringSubmatch(a); m != nil {
		w.status, _ = strconv.Atoi(m[1])
		a = a[len(m[0]):]
	}
	if strings.HasPrefix(a, "{") || strings.HasPrefix(a, "[") {
		if v, err := decodeJSON(a); err == nil {
			w.body = v
			return w
		}
	}
	if digits.MatchString(a) {
		w.text = a
		return w
	}
	for _, piece := range strings.Split(strings.ReplaceAll(a, "…", "..."), "...") {
		for _, word := range strings.Fields(piece) {
			if strings.Contains(word, `":`) {
				w.fragments = append(w.fragments, word)
			}
		}
	}
	return w
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// unknowable names the fields of an answer whose values the docs cannot
// know: secrets, times, and counts that depend on timing everywhere; the
// IDs of snowflake routes and of scrambled and dated tags (their key is
// random, their stamp today's).
func unknowable(path, tagFormat string) map[string]bool {
	u := map[string]bool{"token": true, "expires_at": true, "created_at": true, "at": true, "period_ends_in_ms": true, "left": true}
	ids := path == "/snowflake" || strings.HasPrefix(path, "/api/snowflake/get/")
	if path == "/alloc" || strings.HasPrefix(path, "/api/segment/get/") {
		ids = tagFormat == "scrambled" || tagFormat == "dated"
	}
	if ids {
		for _, k := range []string{"id", "id_str", "ids", "ids_str"} {
			u[k] = true
		}
	}
	return u
}

// match compares got with want, the keys of unknown by shape (noting
// that in byShape and learning the value the server gave in place of the
// docs'), and returns the first difference, or "".
func (w *walk) match(at string, got, want any, unknown map[string]bool, byShape *bool) string {
	switch want := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an object", orTop(at), kind(got))
		}
		for k := range g {
			if _, ok := want[k]; !ok {
				return fmt.Sprintf("%s: got a key %q the docs do not show", orTop(at), k)
			}
		}
		for k, wv := range want {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: no key %q", orTop(at), k)
			}
			if unknown[k] {
				*byShape = true
				w.learn(gv, wv)
				if d := sameShape(at+"."+k, gv, wv); d != "" {
					return d
				}
				continue
			}
			if d := w.match(at+"."+k, gv, wv, unknown, byShape); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(want) {
			return fmt.Sprintf("%s: got %s, want %d elements", orTop(at), kind(got), len(want))
		}
		for i := range want {
			if d := w.match(fmt.Sprintf("%s[%d]", at, i), g[i], want[i], unknown, byShape); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%s: got %v, want %v", orTop(at), got, want)
	}
	return ""
}

// learn notes the value the server gave for a string the docs show, so
// that a later command sending the docs' value sends the server's.
func (w *walk) learn(got, want any) {
	g, ok1 := got.(string)
	d, ok2 := want.(string)
	if ok1 && ok2 && d != "" && d != g && !placeholder.MatchString(d) {
		w.subst[d] = g
	}
}

// fragmentDiff checks one fragment of an answer: as JSON members when it
// parses as such, else as text the body must hold.
func (w *walk) fragmentDiff(got any, body, f string, unknown map[string]bool) string {
	trimmed := strings.Trim(f, ",")
	for _, c := range []string{"{" + trimmed + "}", "{" + strings.TrimSuffix(trimmed, "}") + "}"} {
		members, err := decodeJSON(c)
		if err != nil {
			continue
		}
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("got no JSON object, want one with %s", f)
		}
		for k, wv := range members.(map[string]any) {
			gv, ok := g[k]
			switch {
			case !ok:
				return fmt.Sprintf("no key %q (fragment %s)", k, f)
			case unknown[k]:
				if d := sameShape("."+k, gv, wv); d != "" {
					return d
				}
			default:
				var byShape bool
				if d := w.match("."+k, gv, wv, unknown, &byShape); d != "" {
					return d
				}
			}
		}
		return ""
	}
	if !strings.Contains(body, f) {
		return fmt.Sprintf("the answer does not have %s", f)
	}
	return ""
}

// sameShape: the same JSON type; objects with the same keys, arrays of the
// same length, each element of the same shape.
func sameShape(at string, got, want any) string {
	if kind(got) != kind(want) {
		return fmt.Sprintf("%s: got %s, want %s", orTop(at), kind(got), kind(want))
	}
	switch want := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		if len(g) != len(want) {
			return fmt.Sprintf("%s: got %d keys, want %d", orTop(at), len(g), len(want))
		}
		for k, wv := range want {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: no key %q", orTop(at), k)
			}
			if d := sameShape(at+"."+k, gv, wv); d != "" {
				return d
			}
		}
	case []any:
		g := got.([]any)
		if len(g) != len(want) {
			return fmt.Sprintf("%s: got %d elements, want %d", orTop(at), len(g), len(want))
		}
		for i := range want {
			if d := sameShape(fmt.Sprintf("%s[%d]", at, i), g[i], want[i]); d != "" {
				return d
			}
		}
	}
	return ""
}

// kind is a JSON value's type.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func orTop(at string) string {
	if at == "" {
		return "the body"
	}
	return strings.TrimPrefix(at, ".")
}
