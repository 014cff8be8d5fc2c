package main

import (
	"errors"
	"testing"

	"github.com/idalloc/idalloc/access"
	idclient "github.com/idalloc/idalloc/client"
	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
)

// TestClientSharesTheDomainsWords: the client imports neither segment nor
// access, so it holds their limits and tag sentinels by value. Each
// sentinel is the domain's by errors.Is, reads the same and has its kind;
// one of the same kind and field but other words is not.
func TestClientSharesTheDomainsWords(t *testing.T) {
	for _, c := range []struct {
		name           string
		client, domain error
	}{
		{"ErrInvalidTag", idclient.ErrInvalidTag, segment.ErrInvalidTag},
		{"ErrUnknownTag", idclient.ErrUnknownTag, segment.ErrUnknownTag},
		{"ErrExhausted", idclient.ErrExhausted, segment.ErrExhausted},
		{"ErrPeriodExhausted", idclient.ErrPeriodExhausted, dated.ErrPeriodExhausted},
		{"ErrForbidden", idclient.ErrForbidden, access.ErrForbidden},
		{"ErrTextOnly", idclient.ErrTextOnly, segment.ErrTextOnly},
		{"ErrBatchTooLarge", idclient.ErrBatchTooLarge, segment.ErrBatchTooLarge},
	} {
		if !errors.Is(c.client, c.domain) {
			t.Errorf("%s: errors.Is(client's, domain's) is false", c.name)
		}
		if got, want := c.client.Error(), c.domain.Error(); got != want {
			t.Errorf("%s: client's says %q, the domain's %q", c.name, got, want)
		}
		if got, want := errs.KindOf(c.client), errs.KindOf(c.domain); got != want {
			t.Errorf("%s: client's kind %s, the domain's %s", c.name, got, want)
		}
	}
	if errors.Is(idclient.ErrTextOnly, segment.ErrInvalidTag) {
		t.Error("idclient.ErrTextOnly is segment.ErrInvalidTag: same kind and field, other words")
	}
	for _, c := range []struct {
		name           string
		client, domain int
	}{
		{"DefaultMaxBatch", idclient.DefaultMaxBatch, segment.DefaultMaxBatch},
		{"MaxMaxBatch", idclient.MaxMaxBatch, segment.MaxMaxBatch},
		{"DefaultMaxRange", idclient.DefaultMaxRange, segment.DefaultMaxRange},
		{"MaxMaxRange", idclient.MaxMaxRange, segment.MaxMaxRange},
	} {
		if c.client != c.domain {
			t.Errorf("%s: client's %d, segment's %d", c.name, c.client, c.domain)
		}
	}
}
