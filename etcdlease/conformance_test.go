package etcdlease_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idalloc/idalloc/etcdlease"
	"github.com/idalloc/idalloc/internal/etcdtest"
	"github.com/idalloc/idalloc/internal/layouttest"
	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

// TestConformance runs the suites every lease store passes, of leases and
// of the layouts beside them, on one private etcd, each case under a
// prefix of its own.
func TestConformance(t *testing.T) {
	srv := etcdtest.Start(t)
	var namespaces atomic.Int64
	tg := leasetest.Target{
		Fresh: func(tb testing.TB) leasetest.Namespace {
			prefix := fmt.Sprintf("/etcdlease-conformance/%d/", namespaces.Add(1))
			tb.Cleanup(func() { deletePrefix(tb, srv, prefix) })
			return leasetest.Namespace{
				Open: func(tb testing.TB) workerlease.Store {
					st, err := etcdlease.Open(srv.DSN(), etcdlease.Options{Prefix: prefix})
					if err != nil {
						tb.Fatalf("etcdlease.Open: %v", err)
					}
					tb.Cleanup(func() { st.Close() })
					return st
				},
				// A wiped data directory, for this namespace only; the
				// holders' etcd leases live on, as a client's would until
				// it hears of the loss.
				Forget: func(tb testing.TB) { deletePrefix(tb, srv, prefix) },
				ForgetCluster: func(tb testing.TB, cluster string) {
					deletePrefix(tb, srv, prefix+url.PathEscape(cluster)+"/")
				},
				// Its hold key and its last key; the holder's etcd lease
				// lives on.
				ForgetWorker: func(tb testing.TB, cluster string, workerID int64) {
					for _, kind := range []string{"hold", "last"} {
						deleteKeys(tb, srv, fmt.Sprintf("%s%s/%s/%d", prefix, url.PathEscape(cluster), kind, workerID))
					}
				},
			}
		},
		Unreachable: func(tb testing.TB) workerlease.Store {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				tb.Fatalf("listen: %v", err)
			}
			addr := l.Addr().String()
			l.Close() // nothing answers there now
			st, err := etcdlease.Open(addr, etcdlease.Options{})
			if err != nil {
				tb.Fatalf("etcdlease.Open: %v", err)
			}
			tb.Cleanup(func() { st.Close() })
			return st
		},
		// etcd counts leases in whole seconds, and its lessor ends an
		// expired one up to 500ms late.
		TTL: 2 * time.Second,
	}
	leasetest.Run(t, tg)
	layouttest.Run(t, tg)
}

// deletePrefix removes a namespace's keys; its etcd leases, if any are
// left, end by themselves.
func deletePrefix(tb testing.TB, srv *etcdtest.Server, prefix string) {
	deleteKeys(tb, srv, prefix, clientv3.WithPrefix())
}

// deleteKeys deletes key, or with clientv3.WithPrefix every key under it.
func deleteKeys(tb testing.TB, srv *etcdtest.Server, key string, opts ...clientv3.OpOption) {
	c, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Errorf("etcd client: %v", err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Delete(ctx, key, opts...); err != nil {
		tb.Errorf("delete %s: %v", key, err)
	}
}
