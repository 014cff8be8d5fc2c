package config

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestEffective: each key's value and source as -print-config shows them:
// from the defaults, from the file, from a variable (over the file too),
// and secrets hidden wherever they came from.
func TestEffective(t *testing.T) {
	const file = `{
  "driver": "mysql",
  "dsn": "idalloc:file-pw@tcp(db:3306)/ids",
  "max_batch": 500,
  "Segment": {"Max_Step": 7},
  "snowflake": {"random_sequence_start": false, "cluster": null},
  "lease": {}
}`
	cases := []struct {
		name   string
		env    []string
		key    string
		value  string
		source string // "file" for the file's path
	}{
		{"a default", nil, "http_addr", `":8880"`, "default"},
		{"a default in an object the file has", nil, "lease.driver", `"sql"`, "default"},
		{"null in the file is the default", nil, "snowflake.cluster", `"default"`, "default"},
		{"a default boolean given as null", nil, "snowflake.enabled", `true`, "default"},
		{"from the file", nil, "max_batch", `500`, "file"},
		{"from the file, its key in another case", nil, "segment.max_step", `7`, "file"},
		{"a boolean from the file", nil, "snowflake.random_sequence_start", `false`, "file"},
		{"from a variable", []string{"IDALLOC_RESP_ADDR=:6380"}, "resp_addr", `":6380"`, "IDALLOC_RESP_ADDR"},
		{"from a variable over the file", []string{"IDALLOC_MAX_BATCH=9"}, "max_batch", `9`, "IDALLOC_MAX_BATCH"},
		{"an empty variable leaves the file's", []string{"IDALLOC_MAX_BATCH="}, "max_batch", `500`, "file"},
		{"a nested key from a variable", []string{"IDALLOC_REGION_COUNT=2"}, "region.count", `2`, "IDALLOC_REGION_COUNT"},
		{"the token, set", []string{"IDALLOC_ADMIN_TOKEN=tok-s3cret"}, "admin_token", `(set)`, "IDALLOC_ADMIN_TOKEN"},
		{"the token, not set", nil, "admin_token", `""`, "default"},
		{"the file's DSN", nil, "dsn", `"idalloc:***@tcp(db:3306)/ids"`, "file"},
		{"a DSN from a variable", []string{"IDALLOC_DSN=u:env-pw@tcp(db2:3306)/ids"}, "dsn", `"u:***@tcp(db2:3306)/ids"`, "IDALLOC_DSN"},
		{"a PostgreSQL URL", []string{"IDALLOC_DRIVER=postgres", "IDALLOC_DSN=postgres://u:url-pw@db:5432/ids?sslmode=disable"},
			"dsn", `"postgres://u:***@db:5432/ids?sslmode=disable"`, "IDALLOC_DSN"},
		{"a lease store's URL", []string{"IDALLOC_LEASE_DRIVER=redis", "IDALLOC_LEASE_DSN=redis://:redis-pw@r:6379/0"},
			"lease.dsn", `"redis://:***@r:6379/0"`, "IDALLOC_LEASE_DSN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, file)
			s, err := Load(path, true, c.env)
			if err != nil {
				t.Fatal(err)
			}
			want := Setting{Key: c.key, Value: c.value, Source: c.source}
			if c.source == "file" {
				want.Source = path
			}
			var got Setting
			for _, st := range s.Effective() {
				if st.Key == c.key {
					got = st
				}
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			var out bytes.Buffer
			if err := s.PrintEffective(&out); err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"file-pw", "tok-s3cret", "env-pw", "url-pw", "redis-pw"} {
				if strings.Contains(out.String(), secret) {
					t.Errorf("-print-config shows a secret, %q:\n%s", secret, out.String())
				}
			}
		})
	}
}

// TestEffectiveListsEveryKey: one line per key, in Config's order, under
// a line naming the file; a missing file (the default config.json) says so.
func TestEffectiveListsEveryKey(t *testing.T) {
	missing := t.TempDir() + "/config.json"
	s, err := Load(missing, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := s.PrintEffective(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if want := "config file: " + missing + " (not there"; !strings.HasPrefix(lines[0], want) {
		t.Errorf("first line %q, want it to begin %q", lines[0], want)
	}
	if got := strings.Fields(lines[1]); strings.Join(got, " ") != "key value from" {
		t.Errorf("header %q, want key, value, from", lines[1])
	}
	rows := lines[2:]
	if len(rows) != len(envVars) {
		t.Fatalf("%d lines of keys, want %d:\n%s", len(rows), len(envVars), out.String())
	}
	for i, e := range envVars {
		f := strings.Fields(rows[i])
		if len(f) != 3 || f[0] != e.Key || f[2] != "default" {
			t.Errorf("line %d: %q, want key %s, its value and default", i+3, rows[i], e.Key)
		}
	}
}

// TestRedactDSN: no form of DSN any store takes shows its password.
func TestRedactDSN(t *testing.T) {
	cases := []struct{ dsn, want string }{
		{"idalloc.db", "idalloc.db"},
		{"file:/var/lib/idalloc/ids.db?_pragma=busy_timeout(5000)", "file:/var/lib/idalloc/ids.db?_pragma=busy_timeout(5000)"},
		{"u:pw@tcp(db:3306)/ids", "u:***@tcp(db:3306)/ids"},
		{"u:p@ss:w/rd@tcp(db:3306)/ids?parseTime=true", "u:***@tcp(db:3306)/ids?parseTime=true"},
		{"u@tcp(db:3306)/ids", "u@tcp(db:3306)/ids"},
		{"u:@tcp(db:3306)/ids", "u:***@tcp(db:3306)/ids"},
		{"postgres://u:pw@db:5432/ids?sslmode=disable", "postgres://u:***@db:5432/ids?sslmode=disable"},
		{"postgres://u@db/ids?password=pw&sslmode=disable", "postgres://u@db/ids?password=***&sslmode=disable"},
		{"postgres://u@db:5432/ids", "postgres://u@db:5432/ids"},
		{"host=db user=u password=pw dbname=ids", "host=db user=u password=*** dbname=ids"},
		{"host=db password='p w\\'x' dbname=ids", "host=db password=*** dbname=ids"},
		{"password = pw host=db", "password = *** host=db"},
		{"redis://:pw@r:6379/0", "redis://:***@r:6379/0"},
		{"rediss://user:pw@r:6380", "rediss://user:***@r:6380"},
		{"http://10.0.0.1:2379,http://u:pw@10.0.0.2:2379", "http://10.0.0.1:2379,http://u:***@10.0.0.2:2379"},
		{"postgres://u:p w%zz@db/ids", "postgres://(not shown: not a URL that can be read)"},
	}
	for _, c := range cases {
		if got := redactDSN(c.dsn); got != c.want {
			t.Errorf("redactDSN(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

// TestSecretsAreTagged: a key whose name says it holds a secret is shown
// redacted by -print-config, so a new one cannot be printed in clear by
// omission.
func TestSecretsAreTagged(t *testing.T) {
	secret := regexp.MustCompile(`(?i)(token|dsn|password|secret|credential)[^.]*$`)
	for _, e := range envVars {
		tag := reflect.TypeFor[Config]().FieldByIndex(e.field).Tag.Get("print")
		if secret.MatchString(e.Key) && tag != "secret" && tag != "dsn" {
			t.Errorf("key %q holds a secret by its name, but its field has no print:\"secret\" or print:\"dsn\" tag", e.Key)
		}
	}
}
