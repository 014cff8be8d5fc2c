package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestStartWithTheDatabaseDownSaysSo: with MySQL unreachable the start fails
// at once, and the one-line error names the host and database, says that
// idalloc does not wait, and never shows the password.
func TestStartWithTheDatabaseDownSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	c := config.Default()
	c.Driver, c.DSN = "mysql", "idalloc:s3cret-pw@tcp("+addr+")/ids"
	cfg, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	st, err := startStore(t.Context(), cfg, false, slog.New(slog.DiscardHandler))
	if err == nil {
		st.Close()
		t.Fatalf("startStore with nothing at %s: got no error", addr)
	}
	msg := err.Error()
	for _, want := range []string{addr + "/ids", "does not wait for the database"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "s3cret-pw") || strings.Contains(msg, "\n") {
		t.Errorf("error %q shows the password or spans lines", msg)
	}
}

// TestTakenPortNamesTheKey: a port in use fails the start with the key
// that asked for it, and the environment variable when that set it.
func TestTakenPortNamesTheKey(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	cases := []struct {
		name string
		body string
		env  map[string]string
		want string // after the config's path, if it is named
	}{
		{"http_addr in the file", `{"http_addr":"` + addr + `"}`, nil, `key "http_addr": listen tcp ` + addr},
		{"http_addr from the environment", `{}`, map[string]string{"IDALLOC_HTTP_ADDR": addr},
			`IDALLOC_HTTP_ADDR (key "http_addr"): listen tcp ` + addr},
		{"resp_addr in the file", `{"http_addr":"127.0.0.1:0","resp_addr":"` + addr + `"}`, nil, `key "resp_addr": listen tcp ` + addr},
		{"resp_addr from the environment", `{"http_addr":"127.0.0.1:0"}`, map[string]string{"IDALLOC_RESP_ADDR": addr},
			`IDALLOC_RESP_ADDR (key "resp_addr"): listen tcp ` + addr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range config.EnvVars() {
				t.Setenv(v.Name, c.env[v.Name])
			}
			path := writeConfig(t, c.body)
			err := run([]string{"-config", path})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "address already in use") {
				t.Errorf("got %v, want an error saying %s: ... address already in use", err, c.want)
			}
		})
	}
}

// TestMySQLStartSaysWhatToDo: an empty database names the two ways to
// create the tables, refused credentials name the user and server (never
// the password) and the dsn's source, and neither is blamed on a database
// that is down; -init-schema logs each thing it created, and then that
// nothing was left to do.
func TestMySQLStartSaysWhatToDo(t *testing.T) {
	dsn, cfg, wrong := storetest.EmptyMySQL(t)
	cases := []struct {
		name       string
		dsn        string
		env        bool // the dsn comes from IDALLOC_DSN
		initSchema bool
		want       []string // in the error, or else in the log
	}{
		{"empty database", dsn, false, false, []string{"idalloc's tables are missing: segments, segment_periods, worker_leases, worker_layouts, alloc_tokens, audit_log, idalloc_region;",
			"-init-schema", "schema.sql"}},
		{"wrong password", wrong.FormatDSN(), true, false, []string{`IDALLOC_DSN (key "dsn"): `,
			"credentials refused for " + cfg.User + "@" + cfg.Addr, "correct the user or password"}},
		{"init-schema on the empty database", dsn, false, true, []string{"init-schema: created table segments",
			"init-schema: created table segment_periods", "init-schema: created table worker_leases",
			"init-schema: created table worker_layouts", "init-schema: created table alloc_tokens",
			"init-schema: created table audit_log", "init-schema: created table idalloc_region"}},
		{"init-schema again", dsn, false, true, []string{"init-schema: the schema was complete; nothing changed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"IDALLOC_DRIVER": "mysql"}
			path := writeConfig(t, fmt.Sprintf(`{"dsn": %q}`, c.dsn))
			if c.env {
				env["IDALLOC_DSN"] = c.dsn
			}
			s, err := config.Load(path, true, environ(env))
			if err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			st, err := startStore(t.Context(), s, c.initSchema, slog.New(slog.NewTextHandler(&logged, nil)))
			got := logged.String()
			if err == nil {
				st.Close()
			} else {
				got = err.Error()
				for _, never := range []string{"supervisor", "does not wait", wrong.Passwd, "Error 1146"} {
					if strings.Contains(got, never) {
						t.Errorf("error %q says %q", got, never)
					}
				}
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to say %q", got, w)
				}
			}
		})
	}
}

// TestAdminTokenThatIsATagToken: a start whose admin_token is the secret
// of a per-tag token (one idalloc migrate imported, not knowing the admin
// token) is refused, naming the token and the fix; with another
// admin_token the store is fine.
func TestAdminTokenThatIsATagToken(t *testing.T) {
	const secret = "0f673adf80504e2eaa552f5d791b644c"
	db := filepath.Join(t.TempDir(), "ids.db")
	st, err := store.OpenSQLite(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := access.NewAdmin(st, segment.ValidTag, nil, "") // as migrate makes them
	if err == nil {
		_, _, err = admin.Create(t.Context(), "test", access.NewToken{Name: "tinyid-7", AppTags: []string{"test"}, Secret: secret})
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(adminToken string) config.Settings {
		c := config.Default()
		c.DSN, c.AdminToken = db, adminToken
		s, err := c.Validate()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, closeAll, err := buildParts(t.Context(), cfg(secret), false, discard)
	closeAll()
	if err == nil || !strings.Contains(err.Error(), `per-tag token "tinyid-7"`) || !strings.Contains(err.Error(), "choose another admin_token") {
		t.Errorf("start with admin_token a tag token's secret: %v, want a refusal naming tinyid-7 and the fix", err)
	}
	p, closeAll, err := buildParts(t.Context(), cfg("another-s3cret-admin-token"), false, discard)
	if err != nil {
		t.Errorf("start with another admin_token: %v", err)
	} else {
		_ = p.alloc.Close(t.Context())
	}
	closeAll()
}

// TestStartErrorsPointTheWay: a start the operator must fix names where
// the dsn was set and the fix, never the password, and is not blamed on a
// database that is down (a supervisor's restart would only loop): a
// database that does not exist (MySQL error 1049, PostgreSQL's 3D000)
// names it and the CREATE DATABASE that makes it; a malformed dsn, or one
// of another driver's form, the form its driver takes; a SQLite file in a
// directory that does not exist, that the dsn is its path.
func TestStartErrorsPointTheWay(t *testing.T) {
	const pw = "s3cret-pw"
	// Named as the tests' databases are, so that a user granted only those
	// (.ci/run's) is told the database does not exist, not access denied.
	missing := "idalloc_test_no_such_" + strings.ToLower(rand.Text()[:8])
	cases := []struct {
		name   string
		driver string
		dsn    func(t *testing.T) string
		want   []string
	}{
		{"mysql: no such database", "mysql", func(t *testing.T) string {
			_, cfg, _ := storetest.EmptyMySQL(t)
			cfg = cfg.Clone()
			cfg.DBName = missing
			return cfg.FormatDSN()
		}, []string{"/" + missing + ": the database does not exist: create it (CREATE DATABASE `" + missing + "`)", "-init-schema"}},
		{"postgres: no such database", "postgres", func(t *testing.T) string {
			return postgresDatabase(t, missing)
		}, []string{"/" + missing + `: the database does not exist: create it (CREATE DATABASE "` + missing + `")`, "-init-schema"}},
		{"mysql: unclosed address", "mysql", constant("idalloc:" + pw + "@tcp(127.0.0.1:3306/ids"),
			[]string{"malformed dsn for mysql (invalid DSN: network address not terminated", "the form is user:pass@tcp(host:3306)/dbname"}},
		{"mysql: no tcp()", "mysql", constant("idalloc:" + pw + "@127.0.0.1:3306/ids"),
			[]string{"malformed dsn for mysql", "the form is user:pass@tcp(host:3306)/dbname"}},
		{"mysql: no database", "mysql", constant("idalloc:" + pw + "@tcp(127.0.0.1:3306)/"),
			[]string{"malformed dsn for mysql (it names no database)", "the form is user:pass@tcp(host:3306)/dbname"}},
		{"mysql: a postgres URL", "mysql", constant("postgres://idalloc:" + pw + "@127.0.0.1:5432/ids"),
			[]string{"malformed dsn for mysql (it has the form of a postgres dsn; set the driver to postgres"}},
		{"postgres: a bad port", "postgres", constant("postgres://idalloc:" + pw + "@127.0.0.1:54x32/ids"),
			[]string{"malformed dsn for postgres (invalid port)", "the form is postgres://user:pass@host:5432/dbname"}},
		{"postgres: bad key=value", "postgres", constant("host=127.0.0.1 port=abc password=" + pw),
			[]string{"malformed dsn for postgres", "the form is postgres://"}},
		{"postgres: a mysql dsn", "postgres", constant("idalloc:" + pw + "@tcp(127.0.0.1:3306)/ids"),
			[]string{"malformed dsn for postgres (it has the form of a mysql dsn; set the driver to mysql"}},
		{"sqlite: a mysql dsn", "sqlite", constant("idalloc:" + pw + "@tcp(127.0.0.1:3306)/ids"),
			[]string{"malformed dsn for sqlite (it has the form of a mysql dsn; set the driver to mysql", "the form is a file's path"}},
		{"sqlite: no such directory", "sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none", "idalloc.db") },
			[]string{"unable to open database file", "the dsn is the file's path: its directory must exist"}},
	}
	for _, c := range cases {
		for _, from := range []string{"env", "file"} {
			t.Run(c.name+", "+from, func(t *testing.T) {
				dsn := c.dsn(t)
				body, env := fmt.Sprintf(`{"driver": %q, "dsn": %q}`, c.driver, dsn), noEnv
				prefix := `key "dsn": `
				if from == "env" {
					body, env = fmt.Sprintf(`{"driver": %q}`, c.driver), []string{"IDALLOC_DSN=" + dsn}
					prefix = `IDALLOC_DSN (key "dsn"): `
				}
				s, err := config.Load(writeConfig(t, body), true, env)
				if err != nil {
					t.Fatal(err)
				}
				st, err := startStore(t.Context(), s, false, slog.New(slog.DiscardHandler))
				if err == nil {
					st.Close()
					t.Fatal("startStore: got no error")
				}
				msg := err.Error()
				t.Logf("%s", msg)
				for _, w := range append([]string{prefix}, c.want...) {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not say %q", msg, w)
					}
				}
				for _, never := range []string{pw, "supervisor", "does not wait", "\n"} {
					if strings.Contains(msg, never) {
						t.Errorf("error %q says %q", msg, never)
					}
				}
			})
		}
	}
}

// constant is a dsn that needs no server.
func constant(dsn string) func(*testing.T) string { return func(*testing.T) string { return dsn } }

// postgresDatabase is the test PostgreSQL server's DSN naming database
// name; it skips t without one.
func postgresDatabase(t *testing.T, name string) string {
	dsn := os.Getenv(storetest.PostgresDSNEnv)
	if dsn == "" {
		t.Skip(storetest.PostgresDSNEnv + " not set: skipping PostgreSQL")
	}
	if !strings.Contains(dsn, "://") {
		return dsn + " dbname=" + name
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
