//go:build unix

package client

import (
	"errors"
	"net/http"
	"testing"
)

// TestToken: against an idalloc with alloc_auth on (docs/api.md §12), ID calls
// without Config.Token fail with ErrUnauthorized, with a token of another
// tag with ErrForbidden (which is ErrUnauthorized too), and neither costs
// an ID: a client with the tag's token gets the tag's first.
func TestToken(t *testing.T) {
	srv := startServer(t, "auth", serverConfig(t.TempDir(), map[string]any{"alloc_auth": true,
		"snowflake": map[string]any{"enabled": true}}))
	srv.createTag(t, "order", 100)
	token := func(name, tag string) string {
		t.Helper()
		status, v := srv.post(t, "/tokens", `{"name":"`+name+`","app_tags":["`+tag+`"]}`)
		tok, _ := v["token"].(string)
		if status != http.StatusCreated || tok == "" {
			t.Fatalf("POST /tokens: HTTP %d %v", status, v)
		}
		return tok
	}
	orders, invoices := token("orders-svc", "order"), token("invoices-svc", "invoice")
	ctx := t.Context()

	for _, c := range []struct {
		name, token string
		want        error
		status      int
	}{
		{"no token", "", ErrUnauthorized, http.StatusUnauthorized},
		{"another tag's token", invoices, ErrForbidden, http.StatusForbidden},
	} {
		cl := newTestClient(t, Config{URLs: []string{srv.URL}, Token: c.token})
		_, err := cl.Next(ctx, "order")
		var e *Error
		if !errors.Is(err, c.want) || !errors.Is(err, ErrUnauthorized) || !errors.As(err, &e) || e.RespCode != 7 || e.HTTPStatus != c.status {
			t.Errorf("%s: Next = %v; want %v, resp_code 7, HTTP %d", c.name, err, c.want, c.status)
		}
		if err := cl.NextN(ctx, "order", make([]int64, 3)); !errors.Is(err, c.want) {
			t.Errorf("%s: NextN = %v; want %v", c.name, err, c.want)
		}
	}
	if _, err := newTestClient(t, Config{URLs: []string{srv.URL}}).Snowflake(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Snowflake without a token = %v; want %v", err, ErrUnauthorized)
	}

	cl := newTestClient(t, Config{URLs: []string{srv.URL}, Token: orders})
	if id, err := cl.Next(ctx, "order"); err != nil || id != 1 {
		t.Errorf("Next with the tag's token = %d, %v; want 1: a refused call took IDs", id, err)
	}
	if _, err := newTestClient(t, Config{URLs: []string{srv.URL}, Token: invoices}).Snowflake(ctx); err != nil {
		t.Errorf("Snowflake with a token: %v; want an ID (any valid token)", err)
	}
}
