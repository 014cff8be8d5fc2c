package access_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/access"
)

// TestAllow: the guard's answer for each kind of token and tag.
func TestAllow(t *testing.T) {
	a, g := newAdmin(t)
	secret, _, err := a.Create(t.Context(), "test", access.NewToken{Name: "svc", AppTags: []string{"order", "invoice"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, token, tag string
		want, wantAny    error
	}{
		{"allowed tag", secret, "order", nil, nil},
		{"other allowed tag", secret, "invoice", nil, nil},
		{"tag not allowed", secret, "payment", access.ErrForbidden, nil},
		{"tag unknown anywhere", secret, "nope", access.ErrForbidden, nil},
		{"no token", "", "order", access.ErrTokenMissing, access.ErrTokenMissing},
		{"unknown token", tinyidToken, "order", access.ErrTokenUnknown, access.ErrTokenUnknown},
		{"the token cut short", secret[:len(secret)-1], "order", access.ErrTokenUnknown, access.ErrTokenUnknown},
		{"the token with a byte more", secret + "x", "order", access.ErrTokenUnknown, access.ErrTokenUnknown},
		{"a token too long to be one", strings.Repeat("a", access.MaxTokenLength+1), "order", access.ErrTokenUnknown, access.ErrTokenUnknown},
		{"the token's hash", access.HashToken(secret), "order", access.ErrTokenUnknown, access.ErrTokenUnknown},
	} {
		if err := g.Allow(c.token, c.tag); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: Allow = %v, want %v", c.name, err, c.want)
		}
		if err := g.AllowAny(c.token); !errors.Is(err, c.wantAny) || (c.wantAny == nil) != (err == nil) {
			t.Errorf("%s: AllowAny = %v, want %v", c.name, err, c.wantAny)
		}
	}
}

// TestAllowAllocatesNothing: the check on every ID call with alloc_auth on.
func TestAllowAllocatesNothing(t *testing.T) {
	a, g := newAdmin(t)
	secret, _, err := a.Create(t.Context(), "test", access.NewToken{Name: "svc", AppTags: []string{"order"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ token, tag string }{{secret, "order"}, {secret, "other"}, {tinyidToken, "order"}} {
		if n := testing.AllocsPerRun(100, func() { _ = g.Allow(c.token, c.tag) }); n != 0 {
			t.Errorf("Allow(%q, %q) allocates %v times, want 0", c.token, c.tag, n)
		}
	}
}

// TestGuardSeesOtherInstances: two guards on one store, as two instances
// on one database; a token revoked through one is refused by the other
// once it has reloaded (its refresh), and a store that fails keeps the
// table loaded last.
func TestGuardSeesOtherInstances(t *testing.T) {
	ctx := t.Context()
	st := newMemStore()
	here, err := access.NewGuard(ctx, st, access.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	// A short refresh: the other instance's reloads run in the background.
	there, err := access.NewGuard(ctx, st, access.Config{Refresh: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	a, err := access.NewAdmin(st, validTag, here, "")
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := a.Create(ctx, "test", access.NewToken{Name: "svc", AppTags: []string{"order"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the other guard to allow the new token", func() bool { return there.Allow(secret, "order") == nil })

	st.setDown(true)
	if err := there.Reload(ctx); !errors.Is(err, errDown) {
		t.Errorf("Reload with the store down = %v, want %v", err, errDown)
	}
	if err := there.Allow(secret, "order"); err != nil {
		t.Errorf("Allow with the store down = %v, want the last table's answer, nil", err)
	}
	st.setDown(false)

	if err := a.Revoke(ctx, "test", "svc"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the other guard to refuse the revoked token", func() bool {
		return errors.Is(there.Allow(secret, "order"), access.ErrTokenUnknown)
	})
	if err := there.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := there.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}

// TestNewGuardRefuses: a negative refresh, and a store that cannot be
// read at start.
func TestNewGuardRefuses(t *testing.T) {
	st := newMemStore()
	if _, err := access.NewGuard(t.Context(), st, access.Config{Refresh: -time.Second}); err == nil {
		t.Error("NewGuard with a negative Refresh: no error")
	}
	st.setDown(true)
	if _, err := access.NewGuard(t.Context(), st, access.Config{}); !errors.Is(err, errDown) {
		t.Errorf("NewGuard on a store down = %v, want %v", err, errDown)
	}
	st.setDown(false)
	st.toks = []access.StoredToken{{Name: "by-hand", Hash: "not hex", AppTags: []string{"order"}}}
	if _, err := access.NewGuard(t.Context(), st, access.Config{}); err == nil || !strings.Contains(err.Error(), "by-hand") {
		t.Errorf("NewGuard on a row with a bad hash = %v, want an error naming it", err)
	}
}

// waitFor polls cond until it holds, failing t after 10s: the guard's
// reload runs on its own goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
	}
}
