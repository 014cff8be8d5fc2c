package main

import (
	"net"
	"strings"
	"testing"
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
	c := defaultConfig()
	c.Driver, c.DSN = "mysql", "idalloc:s3cret-pw@tcp("+addr+")/ids"
	cfg, err := c.validate()
	if err != nil {
		t.Fatal(err)
	}
	st, err := startStore(t.Context(), cfg, false)
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
