package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/config"
)

// TestPrintConfigOpensNothing: idalloc -print-config prints every key with
// its source, the secrets hidden, and ends without an error, though the
// store it names does not answer and its port is taken: it neither opens
// the store nor listens.
func TestPrintConfigOpensNothing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close() // nothing listens there now: connection refused
	for _, v := range config.EnvVars() {
		t.Setenv(v.Name, "")
	}
	t.Setenv("IDALLOC_DRIVER", "mysql")
	t.Setenv("IDALLOC_DSN", "idalloc:s3cret-pw@tcp("+downAddr+")/ids")
	t.Setenv("IDALLOC_ADMIN_TOKEN", "t0ken-s3cret")
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"http_addr":"`+taken.Addr().String()+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = f
	err = run([]string{"-config", path, "-print-config"})
	os.Stdout = stdout
	f.Close()
	if err != nil {
		t.Fatalf("idalloc -print-config: %v, want no error", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	printed := string(b)
	for _, want := range []string{
		"config file: " + path,
		`http_addr `, `"` + taken.Addr().String() + `"`,
		`"idalloc:***@tcp(` + downAddr + `)/ids"`, "IDALLOC_DSN",
		"admin_token ", "(set)", "IDALLOC_ADMIN_TOKEN",
		"metrics.max_tag_series ",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("idalloc -print-config does not say %q:\n%s", want, printed)
		}
	}
	if strings.Contains(printed, "s3cret") {
		t.Errorf("idalloc -print-config shows a secret:\n%s", printed)
	}
}
