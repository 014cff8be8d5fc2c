package config

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"text/tabwriter"
)

// Setting is one key of the effective configuration, as idalloc
// -print-config shows it.
type Setting struct {
	Key string // dotted, as in config.json: "segment.max_step"
	// Value is the key's value in JSON ("\":8880\"", "1000", "true"), with
	// its secret hidden: admin_token is "(set)" or "\"\"", a DSN's password
	// is ***.
	Value string
	// Source is where the value came from: "default", the config file's
	// path, or the IDALLOC_* variable's name.
	Source string
}

// Effective lists every key of s, in Config's order, with its value as the
// server uses it (snowflake.random_sequence_start true when not given) and
// where that value came from. No secret is in it: a field tagged
// print:"secret" shows only whether it is set, one tagged print:"dsn" its
// DSN with the password replaced by ***.
func (s Settings) Effective() []Setting {
	c := s.Config
	random := s.RandomStart
	c.Snowflake.RandomSequenceStart = &random
	cv := reflect.ValueOf(c)
	ct := reflect.TypeFor[Config]()
	out := make([]Setting, 0, len(envVars))
	for _, e := range envVars {
		v := cv.FieldByIndex(e.field)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		var value string
		switch ct.FieldByIndex(e.field).Tag.Get("print") {
		case "secret":
			value = `""`
			if v.String() != "" {
				value = "(set)"
			}
		case "dsn":
			value = quote(redactDSN(v.String()))
		default:
			b, err := json.Marshal(v.Interface())
			if err != nil { // strings, integers and booleans always marshal
				panic(fmt.Sprintf("config: key %q: %v", e.Key, err))
			}
			value = string(b)
		}
		out = append(out, Setting{Key: e.Key, Value: value, Source: s.sources.source(e.Key)})
	}
	return out
}

// PrintEffective writes the effective configuration for idalloc
// -print-config: the config file read (or that there was none), then one
// line per key with its value and where it came from (Effective).
func (s Settings) PrintEffective(w io.Writer) error {
	switch {
	case s.sources.path == "":
		fmt.Fprintln(w, "config file: none")
	case s.sources.read:
		fmt.Fprintf(w, "config file: %s\n", s.sources.path)
	default:
		fmt.Fprintf(w, "config file: %s (not there: every key is its default or its variable's)\n", s.sources.path)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "key\tvalue\tfrom")
	for _, st := range s.Effective() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Key, st.Value, st.Source)
	}
	return tw.Flush()
}

// source names where key's value came from, as Setting.Source says it.
func (s sources) source(key string) string {
	switch {
	case s.env[key] != "":
		return s.env[key]
	case s.file[key]:
		return s.path
	}
	return "default"
}

func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// redactDSN returns dsn with any password in it replaced by ***, in each
// form idalloc's stores take: URLs (postgres://, redis://, etcd's
// comma-separated endpoints) with a password in their user part or a
// password= parameter; PostgreSQL's keyword form (password=…); MySQL's
// user:password@tcp(host)/db. A DSN that is none of these is returned as
// it is (a SQLite path holds no password); one that looks like a URL and
// cannot be read as one is not shown at all, since where its password ends
// cannot be known.
func redactDSN(dsn string) string {
	switch {
	case strings.Contains(dsn, "://"):
		parts := strings.Split(dsn, ",")
		for i, p := range parts {
			parts[i] = redactURL(p)
		}
		return strings.Join(parts, ",")
	case keywordPassword.MatchString(dsn):
		return keywordPassword.ReplaceAllString(dsn, "${1}***")
	}
	return redactMySQL(dsn)
}

// keywordPassword finds the value of password in a DSN of PostgreSQL's
// keyword form, quoted ('a b', with \' inside) or not.
var keywordPassword = regexp.MustCompile(`(?i)((?:^|\s)password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// redactURL hides the password of one URL: in its user part and in any
// query parameter named password.
func redactURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		scheme, _, _ := strings.Cut(s, "://")
		return scheme + "://(not shown: not a URL that can be read)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "***")
	}
	q := u.Query()
	hidden := false
	for k := range q {
		if strings.EqualFold(k, "password") {
			q[k] = []string{"***"}
			hidden = true
		}
	}
	if hidden {
		u.RawQuery = q.Encode()
	}
	// url.URL.String and url.Values.Encode escape the *s.
	return strings.ReplaceAll(u.String(), "%2A%2A%2A", "***")
}

// redactMySQL hides the password of go-sql-driver's form,
// [user[:password]@][net[(addr)]]/dbname[?params], found as that driver
// finds it: the user part ends at the last @ before the last /, and its
// password begins after its first colon.
func redactMySQL(dsn string) string {
	end := len(dsn)
	if i := strings.LastIndexByte(dsn, '/'); i >= 0 {
		end = i
	}
	at := strings.LastIndexByte(dsn[:end], '@')
	if at < 0 {
		return dsn
	}
	colon := strings.IndexByte(dsn[:at], ':')
	if colon < 0 {
		return dsn
	}
	return dsn[:colon+1] + "***" + dsn[at:]
}
