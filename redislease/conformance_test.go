package redislease

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/internal/layouttest"
	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

// TestConformance runs the suites every lease store passes, of leases and
// of the layouts beside them. A namespace is a fresh key prefix on the test
// Redis; each handle has a client of its own, as another process would.
func TestConformance(t *testing.T) {
	tg := leasetest.Target{
		Fresh: func(tb testing.TB) leasetest.Namespace {
			prefix := freshPrefix(tb) // skips tb when Redis is down
			return forgetScoped(leasetest.Namespace{
				Open: func(tb testing.TB) workerlease.Store {
					return New(newTestClient(tb), Options{Prefix: prefix})
				},
				// FLUSHALL, for this namespace only: the test Redis is shared.
				Forget: func(tb testing.TB) { deleteKeys(tb, newTestClient(tb), prefix) },
			}, prefix, func(tb testing.TB) redis.Cmdable { return newTestClient(tb) })
		},
		Unreachable: func(tb testing.TB) workerlease.Store {
			st, err := Open("redis://"+closedAddr(tb)+"/0", Options{})
			if err != nil {
				tb.Fatalf("Open: %v", err)
			}
			tb.Cleanup(func() { _ = st.Close() })
			return st
		},
		TTL: 400 * time.Millisecond,
	}
	leasetest.Run(t, tg)
	layouttest.Run(t, tg)
}
