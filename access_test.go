package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/config"
)

// noTokens is a store whose tokens cannot be read, as a database from
// before them opened without -init-schema.
type noTokens struct{ access.Store }

var errNoTokenTable = errors.New("idalloc's tables are missing: alloc_tokens, audit_log; create them by starting once with -init-schema")

func (noTokens) Tokens(context.Context) ([]access.StoredToken, error) { return nil, errNoTokenTable }

// TestStartGuard: tokens that cannot be loaded stop a start with
// alloc_auth on, naming the key and the store's fix; with it off they
// are a warning, and the instance serves without a guard.
func TestStartGuard(t *testing.T) {
	for _, c := range []struct {
		body    string
		wantErr []string
		wantLog string
	}{
		{`{"alloc_auth":true}`, []string{`key "alloc_auth"`, "alloc_auth is on", "-init-schema"}, ""},
		{`{}`, nil, "per-tag tokens unavailable (alloc_auth is off)"},
	} {
		cfg, err := config.Load(writeConfig(t, c.body), true, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		g, err := startGuard(t.Context(), cfg, noTokens{}, slog.New(slog.NewTextHandler(&logged, nil)))
		if g != nil {
			_ = g.Close()
			t.Errorf("config %s: a guard on a store without tokens", c.body)
		}
		for _, w := range c.wantErr {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("config %s: error %v, want it to say %q", c.body, err, w)
			}
		}
		if c.wantErr == nil && err != nil {
			t.Errorf("config %s: error %v, want none", c.body, err)
		}
		if !strings.Contains(logged.String(), c.wantLog) {
			t.Errorf("config %s: logged %q, want %q", c.body, logged.String(), c.wantLog)
		}
	}
}
