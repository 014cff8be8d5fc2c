package access_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
)

func TestHashToken(t *testing.T) {
	// SHA-256("abc"), FIPS 180-2's example.
	if got, want := access.HashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("HashToken(abc) = %s, want %s", got, want)
	}
	long := strings.Repeat("x", access.MaxTokenLength+1) // past the stack buffer
	if got := access.HashToken(long); len(got) != 64 || got == access.HashToken(long[:access.MaxTokenLength]) {
		t.Errorf("HashToken of %d bytes = %s: want its own 64 hex digits", len(long), got)
	}
}

func TestValidName(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"orders-svc", true},
		{"a", true},
		{"Tinyid:test_odd.1", true},
		{strings.Repeat("n", 64), true},
		{"", false},
		{strings.Repeat("n", 65), false},
		{"orders svc", false},
		{"orders/svc", false},
		{"ordérs", false},
		{"x'; DROP TABLE alloc_tokens;--", false},
	} {
		if got := access.ValidName(c.name); got != c.want {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMadeSecrets: a made token is 32 random bytes in base64url, and a
// chosen one of its form is accepted back (a secret moved elsewhere).
func TestMadeSecrets(t *testing.T) {
	admin, _ := newAdmin(t)
	seen := map[string]bool{}
	for i := range 20 {
		secret, _, err := admin.Create(t.Context(), "test", access.NewToken{Name: "t" + string(rune('a'+i)), AppTags: []string{"order"}})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(secret)
		if err != nil || len(raw) != 32 {
			t.Fatalf("made token %q: %d bytes of base64url (%v), want 32", secret, len(raw), err)
		}
		if seen[secret] {
			t.Fatalf("made token %q twice", secret)
		}
		seen[secret] = true
	}
}

// TestCheckAdminToken: refused when a tag token has it as its secret,
// naming that token; passed for another secret or none; the store's error
// when it cannot list them.
func TestCheckAdminToken(t *testing.T) {
	st := newMemStore()
	if err := st.CreateToken(t.Context(), access.StoredToken{Name: "svc", Hash: access.HashToken("s3cret")}, access.Entry{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		admin, want string
	}{
		{"s3cret", `the per-tag token "svc" has it as its secret`},
		{"other", ""},
		{"", ""},
	} {
		err := access.CheckAdminToken(t.Context(), st, c.admin)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && !strings.Contains(got, c.want)) {
			t.Errorf("CheckAdminToken(%q) = %v; want %q", c.admin, err, c.want)
		}
	}
	st.setDown(true)
	if err := access.CheckAdminToken(t.Context(), st, "s3cret"); err == nil {
		t.Error("CheckAdminToken with the store down: no error")
	}
}
