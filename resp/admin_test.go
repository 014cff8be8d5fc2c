package resp

import (
	"context"
	"errors"
	"testing"

	"github.com/idalloc/idalloc/internal/frontendtest"
)

// TestAuthorize: the admin rules of docs/api.md §2 over RESP. With a token,
// only AUTH with it gives admin rights, from anywhere; without one, only a
// loopback peer has them.
func TestAuthorize(t *testing.T) {
	for _, c := range []struct {
		token, remote string
		authed        bool
		want          error
	}{
		{"", "127.0.0.1:5000", false, nil},
		{"", "127.0.0.2:5000", false, nil},
		{"", "[::1]:5000", false, nil},
		{"", "[::ffff:127.0.0.1]:5000", false, nil},
		{"", "10.1.2.3:5000", false, errLoopbackOnly},
		{"", "[2001:db8::1]:5000", false, errLoopbackOnly},
		{"", "not an address", false, errLoopbackOnly},
		{"s3cret", "127.0.0.1:5000", false, errNoAuth},
		{"s3cret", "10.1.2.3:5000", false, errNoAuth},
		{"s3cret", "10.1.2.3:5000", true, nil},
	} {
		srv, err := New(Config{AdminToken: c.token}, Deps{Segments: nopSegments{}})
		if err != nil {
			t.Fatal(err)
		}
		ses := newSession(1, c.remote)
		if c.authed {
			if err := srv.checkToken(ses, []byte(c.token)); err != nil {
				t.Fatalf("checkToken with the token: %v", err)
			}
		}
		if got := srv.authorize(ses); got != c.want {
			t.Errorf("token %q, peer %s, AUTH %v: authorize = %v, want %v", c.token, c.remote, c.authed, got, c.want)
		}
	}
	srv, _ := New(Config{AdminToken: "s3cret"}, Deps{Segments: nopSegments{}})
	for _, tok := range []string{"", "s3cre", "s3cret ", "S3CRET"} {
		if err := srv.checkToken(newSession(1, "127.0.0.1:1"), []byte(tok)); err != errWrongToken {
			t.Errorf("checkToken(%q) = %v, want errWrongToken", tok, err)
		}
	}
	open, _ := New(Config{}, Deps{Segments: nopSegments{}})
	if err := open.checkToken(newSession(1, "127.0.0.1:1"), nil); err != errNoToken {
		t.Errorf("AUTH without admin_token configured = %v, want errNoToken", err)
	}
}

// nopSegments is a Segments that is never called.
type nopSegments struct{ Segments }

// faultySegments fails Next with a fault, or panics.
type faultySegments struct {
	nopSegments
	panics bool
}

func (f faultySegments) Next(context.Context, string) (int64, error) {
	if f.panics {
		panic("boom")
	}
	return 0, errors.New("disk on fire at /var/lib/secret")
}

// TestInternalErrors: a fault is answered "ERR internal error", never its
// text; a panic in a command is answered so too and closes that
// connection only, the process going on.
func TestInternalErrors(t *testing.T) {
	for _, panics := range []bool{false, true} {
		srv, err := New(Config{}, Deps{Segments: faultySegments{panics: panics}})
		if err != nil {
			t.Fatal(err)
		}
		addr := frontendtest.Serve(t, srv)
		conn, other := dialRaw(t, addr), dialRaw(t, addr)
		if got := conn.send(t, "GET t\r\n"); got != "-ERR internal error" {
			t.Errorf("panics %v: GET = %q, want -ERR internal error", panics, got)
		}
		if panics && !conn.closed(t) {
			t.Error("connection open after its command panicked")
		}
		if !panics && conn.send(t, "PING\r\n") != "+PONG" {
			t.Error("connection unusable after an internal error")
		}
		if got := other.send(t, "PING\r\n"); got != "+PONG" {
			t.Errorf("panics %v: another connection's PING = %q", panics, got)
		}
	}
}
