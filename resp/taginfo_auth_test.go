package resp

import (
	"context"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/segment"
)

// TestTagInfoNeedsToken: with alloc_auth on, INFO tag and HGETALL tag
// answer only a connection whose AUTH token is allowed the tag, or the
// admin's (docs/api.md §15); an unknown tag is refused with the very error of a
// forbidden one, and INFO with a section name a tag also has answers the
// section to a connection that may not see that tag.
func TestTagInfoNeedsToken(t *testing.T) {
	ctx := context.Background()
	in := start(t, options{cfg: Config{AllocAuth: true, AdminToken: "s3cret-admin"}, tokens: true})
	for _, tag := range []string{"order", "server"} {
		if _, err := in.alloc.CreateTag(ctx, segment.NewTag{AppTag: tag, Step: 10}); err != nil {
			t.Fatal(err)
		}
	}
	orders := in.mustToken(t, "orders-svc", "order", "server")
	invoices := in.mustToken(t, "invoices-svc", "invoice")

	missing := "NOAUTH " + access.ErrTokenMissing.Error()
	forbidden := "NOAUTH " + access.ErrForbidden.Error()
	for _, c := range []struct {
		name, password string
		want           string
	}{
		{"without AUTH", "", missing},
		{"with another tag's token", invoices, forbidden},
	} {
		rdb := rdbWith(t, in, c.password)
		for _, cmd := range []string{"INFO", "HGETALL"} {
			for _, tag := range []string{"order", "nope"} {
				if err := rdb.Do(ctx, cmd, tag).Err(); err == nil || err.Error() != c.want {
					t.Errorf("%s %s %s: %v, want %q", cmd, tag, c.name, err, c.want)
				}
			}
		}
		// "server" is a tag and a section: a connection that may not see
		// the tag gets the section, as if there were no such tag.
		if got, err := rdb.Info(ctx, "server").Result(); err != nil || !strings.HasPrefix(got, "# Server\r\n") {
			t.Errorf("INFO server %s: %q %v, want the Server section", c.name, got, err)
		}
	}
	for _, c := range []struct{ name, password string }{{"the tag's token", orders}, {"the admin token", "s3cret-admin"}} {
		rdb := rdbWith(t, in, c.password)
		if got, err := rdb.Info(ctx, "order").Result(); err != nil || !strings.HasPrefix(got, "# Tag\r\nname:order\r\n") {
			t.Errorf("INFO order with %s: %q %v, want the tag's lines", c.name, got, err)
		}
		if got, err := rdb.Info(ctx, "server").Result(); err != nil || !strings.HasPrefix(got, "# Tag\r\nname:server\r\n") {
			t.Errorf("INFO server with %s: %q %v, want the tag's lines", c.name, got, err)
		}
		if got, err := rdb.HGetAll(ctx, "order").Result(); err != nil || got["step"] != "10" {
			t.Errorf("HGETALL order with %s: %v %v, want its settings", c.name, got, err)
		}
	}
	if got, err := rdbWith(t, in, "s3cret-admin").HGetAll(ctx, "nope").Result(); err != nil || len(got) != 0 {
		t.Errorf("HGETALL nope with the admin token: %v %v, want an empty answer", got, err)
	}
}
