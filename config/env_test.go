package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// configKeys walks Config's json tags as config.json nests them, returning
// each key's dotted name and its field's index.
func configKeys(t reflect.Type, prefix string, index []int) map[string][]int {
	keys := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		at := append(slices.Clone(index), i)
		if isObject(f.Type) {
			for k, v := range configKeys(f.Type, prefix+tag+".", at) {
				keys[k] = v
			}
			continue
		}
		keys[prefix+tag] = at
	}
	return keys
}

// TestEveryKeyHasAVariable: each key of config.json, nested ones and
// booleans included, has the variable IDALLOC_ + the key in upper case
// with its dots as underscores, and setting it sets that key, and no other
// variable is listed (docs/api.md §15).
func TestEveryKeyHasAVariable(t *testing.T) {
	keys := configKeys(reflect.TypeFor[Config](), "", nil)
	listed := map[string]bool{}
	for _, e := range EnvVars() {
		listed[e.Key] = true
		if strings.HasPrefix(e.Name, TestEnvPrefix) {
			t.Errorf("%s (key %q) begins %s, which a start leaves to the tests", e.Name, e.Key, TestEnvPrefix)
		}
	}
	for key, index := range keys {
		name := "IDALLOC_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
		if !listed[key] {
			t.Errorf("key %q has no variable", key)
			continue
		}
		c := Default()
		field := reflect.ValueOf(&c).Elem().FieldByIndex(index)
		var value string
		var want any
		switch field.Kind() {
		case reflect.String:
			value, want = "v-"+key, "v-"+key
		case reflect.Bool:
			value, want = "true", true
			if field.Bool() {
				value, want = "false", false
			}
		case reflect.Int, reflect.Int64:
			value, want = "7", int64(7)
		case reflect.Pointer:
			value, want = "false", false
		case reflect.Struct: // a Duration
			value, want = "7s", 7*time.Second
		default:
			t.Errorf("key %q: a field of kind %v, which this test cannot set", key, field.Kind())
			continue
		}
		src := sources{env: map[string]string{}}
		if err := applyEnv(&c, []string{name + "=" + value}, &src); err != nil {
			t.Errorf("%s=%s: %v", name, value, err)
			continue
		}
		var got any
		switch field.Kind() {
		case reflect.String:
			got = field.String()
		case reflect.Bool:
			got = field.Bool()
		case reflect.Int, reflect.Int64:
			got = field.Int()
		case reflect.Pointer:
			got = !field.IsNil() && field.Elem().Bool()
		case reflect.Struct:
			got = field.Interface().(Duration).Duration()
		}
		if got != want || src.env[key] != name {
			t.Errorf("%s=%s: key %q is %v (from %q), want %v from %s", name, value, key, got, src.env[key], want, name)
		}
	}
	if len(listed) != len(keys) {
		t.Errorf("%d variables for %d keys", len(listed), len(keys))
	}
}

// TestEnvironmentSetsEveryKind: through Load, variables set booleans (the
// one an operator turns auth on with among them), integers, nested keys
// and durations, and an empty one leaves its key as the file has it.
func TestEnvironmentSetsEveryKind(t *testing.T) {
	env := []string{
		"IDALLOC_ALLOC_AUTH=true", "IDALLOC_SNOWFLAKE_ENABLED=false", "IDALLOC_SNOWFLAKE_RANDOM_SEQUENCE_START=false",
		"IDALLOC_REGION_COUNT=2", "IDALLOC_REGION_ID=1", "IDALLOC_SEGMENT_MAX_STEP=5", "IDALLOC_MAX_CONNS=9",
		"IDALLOC_RESP_IDLE_TIMEOUT=2m", "IDALLOC_METRICS_MAX_TAG_SERIES=3", "IDALLOC_DSN=", "PATH=/bin",
	}
	s, err := Load(writeConfig(t, `{"dsn":"from-file.db","region":{"count":4}}`), true, env)
	if err != nil {
		t.Fatal(err)
	}
	if !s.AllocAuth || s.Snowflake.Enabled || s.RandomStart || s.Region != (RegionConfig{Count: 2, ID: 1}) ||
		s.Segment.MaxStep != 5 || s.MaxConns != 9 || s.RespIdleTimeout.Duration() != 2*time.Minute ||
		s.Metrics.MaxTagSeries != 3 || s.DSN != "from-file.db" {
		t.Errorf("got %+v, want the environment's values and the file's dsn", s.Config)
	}
	if got := s.Origin("alloc_auth"); got != `IDALLOC_ALLOC_AUTH (key "alloc_auth")` {
		t.Errorf("Origin(alloc_auth) = %q, want the variable", got)
	}
}

// TestEnvironmentRefusals: an IDALLOC_* variable that names no setting
// stops the start, naming it and the nearest that does (whatever its case
// and even when empty, as a mistyped name is); IDALLOC_TEST_* and other
// variables are left be; a value not of its key's kind names the variable
// and the key.
func TestEnvironmentRefusals(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want []string // in the error; none: loaded
	}{
		{"a mistyped token", []string{"IDALLOC_ADMIN_TOKN=s3cret"},
			[]string{`environment: IDALLOC_ADMIN_TOKN names no setting (the nearest is IDALLOC_ADMIN_TOKEN, key "admin_token")`,
				"idalloc -help lists the variables", "IDALLOC_TEST_"}},
		{"empty, mistyped", []string{"IDALLOC_ADMIN_TOKN="}, []string{"IDALLOC_ADMIN_TOKN names no setting"}},
		{"lower case", []string{"idalloc_alloc_auth=true"}, []string{`idalloc_alloc_auth names no setting (the nearest is IDALLOC_ALLOC_AUTH, key "alloc_auth")`}},
		{"a key of an object, mistyped", []string{"IDALLOC_SNOWFLAKE_WORKERBITS=4"},
			[]string{`IDALLOC_SNOWFLAKE_WORKERBITS names no setting (the nearest is IDALLOC_SNOWFLAKE_WORKER_BITS, key "snowflake.worker_bits")`}},
		{"two", []string{"IDALLOC_REGION=2", "IDALLOC_AUTH=true"},
			[]string{"IDALLOC_AUTH names no setting", "IDALLOC_REGION names no setting"}},
		{"the tests' own", []string{"IDALLOC_TEST_MYSQL_DSN=root@tcp(127.0.0.1:3306)/x", "IDALLOC_TEST_MANY_TAGS=10"}, nil},
		{"others'", []string{"HOME=/root", "IDALLOCATE=1", "MY_IDALLOC_DSN=x"}, nil},
		{"a boolean", []string{"IDALLOC_ALLOC_AUTH=yes"}, []string{`IDALLOC_ALLOC_AUTH (key "alloc_auth"): want true or false, got "yes"`}},
		{"an integer", []string{"IDALLOC_MAX_CONNS=many"}, []string{`IDALLOC_MAX_CONNS (key "max_conns"): want an integer, got "many"`}},
		{"an integer too large", []string{"IDALLOC_REGION_COUNT=99999999999999999999"}, []string{`IDALLOC_REGION_COUNT (key "region.count"): want an integer`}},
		{"out of range", []string{"IDALLOC_MAX_CONNS=0"}, []string{`IDALLOC_MAX_CONNS (key "max_conns"): 0 is outside 1..`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, `{}`)
			_, err := Load(path, true, c.env)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want %q", c.want)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("got %q, want it to say %q", msg, w)
				}
			}
			if strings.Contains(msg, "s3cret") || strings.Contains(msg, path) || strings.Contains(msg, "\n") {
				t.Errorf("got %q: it shows a value, blames the file or spans lines", msg)
			}
		})
	}
}
