package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
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
			for _, o := range config.EnvOverrides {
				t.Setenv(o.Name, c.env[o.Name])
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
			s, err := config.Load(path, true, func(k string) string { return env[k] })
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
