package config

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Every key of config.json has an environment variable (docs/api.md §15):
// the key in upper case, its dots as underscores, after envPrefix, so
// segment.max_step is IDALLOC_SEGMENT_MAX_STEP. The variables are derived
// from Config's json tags: a key added to Config has its variable, its
// line in the help and its place among the known names with nothing more
// to write. A variable that begins with envPrefix and names no key
// refuses the start (an operator who set IDALLOC_ALLOC_AUTH believes auth
// is on), unless it begins with TestEnvPrefix.

// envPrefix begins every variable of a setting.
const envPrefix = "IDALLOC_"

// TestEnvPrefix begins the variables of idalloc's tests and measurement
// tools (IDALLOC_TEST_MYSQL_DSN, IDALLOC_TEST_MANY_TAGS): idalloc reads
// none of them, and a start leaves them be. No key's variable begins so.
const TestEnvPrefix = envPrefix + "TEST_"

// EnvVar is the environment variable of one key.
type EnvVar struct {
	Name string // IDALLOC_SEGMENT_MAX_STEP
	Key  string // segment.max_step, as in config.json
	// field is the key's field in Config, as reflect.Value.FieldByIndex
	// takes it.
	field []int
	typ   reflect.Type
}

// Kind says in words what the variable's value must be: "an integer",
// "true or false", "a string".
func (v EnvVar) Kind() string { return goType(v.typ) }

// envVars are the variables of every key, in Config's order.
var envVars = envVarsOf(reflect.TypeFor[Config](), "", nil)

// EnvVars lists the variable of every key of config.json, in the order
// of Config's fields.
func EnvVars() []EnvVar { return slices.Clone(envVars) }

// envVarsOf lists the variables of struct type t's keys, each key heading
// with prefix and each field index with index; a struct field is an
// object of keys, listed in its place.
func envVarsOf(t reflect.Type, prefix string, index []int) []EnvVar {
	var out []EnvVar
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		key, at := prefix+name, append(slices.Clip(index), i)
		if isObject(f.Type) {
			out = append(out, envVarsOf(f.Type, key+".", at)...)
			continue
		}
		out = append(out, EnvVar{Name: envName(key), Key: key, field: at, typ: f.Type})
	}
	return out
}

// envName is the variable of key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// applyEnv sets the keys of c that environ (os.Environ's "NAME=value"
// form) has a variable for, set and not empty, and records each in src.
// Errors: a variable that names no key (with the nearest that does), or a
// value that is not of its key's kind, naming the variable and the key.
func applyEnv(c *Config, environ []string, src *sources) error {
	if err := unknownEnv(environ); err != nil {
		return err
	}
	values := map[string]string{}
	for _, kv := range environ {
		if name, v, _ := strings.Cut(kv, "="); v != "" {
			values[name] = v // a later duplicate wins, as with getenv
		}
	}
	cv := reflect.ValueOf(c).Elem()
	for _, e := range envVars {
		v, ok := values[e.Name]
		if !ok {
			continue
		}
		if err := setField(cv.FieldByIndex(e.field), v); err != nil {
			return fmt.Errorf("%s (key %q): %w", e.Name, e.Key, err)
		}
		src.env[e.Key] = e.Name
	}
	return nil
}

// setField sets f, a field of Config, to s read as its kind.
func setField(f reflect.Value, s string) error {
	if u, ok := f.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch f.Kind() {
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		if err := setField(p.Elem(), s); err != nil {
			return err
		}
		f.Set(p)
		return nil
	case reflect.String:
		f.SetString(s)
		return nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		f.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("want an integer, got %q", s)
		}
		f.SetInt(n)
		return nil
	}
	return fmt.Errorf("a %s cannot be set from the environment", f.Type())
}

// unknownEnv refuses the variables of environ that begin with envPrefix,
// in any case, and name no key, each with the nearest name that does;
// those that begin with TestEnvPrefix are the tests'.
func unknownEnv(environ []string) error {
	var why []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if !strings.HasPrefix(upper, envPrefix) || strings.HasPrefix(upper, TestEnvPrefix) ||
			slices.ContainsFunc(envVars, func(e EnvVar) bool { return e.Name == name }) {
			continue
		}
		near := nearestEnvVar(upper)
		why = append(why, fmt.Sprintf("%s names no setting (the nearest is %s, key %q)", name, near.Name, near.Key))
	}
	if len(why) == 0 {
		return nil
	}
	slices.Sort(why)
	return fmt.Errorf("environment: %s; idalloc -help lists the variables, and those beginning %s are the tests'",
		strings.Join(why, "; "), TestEnvPrefix)
}

// nearestEnvVar is the variable whose name is the fewest single-byte
// edits away from name (the first in Config's order among equals).
func nearestEnvVar(name string) EnvVar {
	best, bestD := envVars[0], -1
	for _, e := range envVars {
		if d := editDistance(name, e.Name); bestD < 0 || d < bestD {
			best, bestD = e, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
