package etcdlease

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idalloc/idalloc/internal/etcdtest"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// testTTL is the shortest lease etcdtest's server grants (its election
// timeout sets etcd's TTL floor to 1s); etcd ends it up to 500ms late, when
// its lessor next looks.
const testTTL = time.Second

var prefixes atomic.Int64

// freshPrefix returns a key prefix no other test uses on a shared server.
func freshPrefix() string { return fmt.Sprintf("/etcdlease-test/%d/", prefixes.Add(1)) }

// openStore opens a Store with a client of its own on srv under prefix,
// closed at tb's cleanup.
func openStore(tb testing.TB, srv *etcdtest.Server, prefix string) *Store {
	tb.Helper()
	st, err := Open(srv.DSN(), Options{Prefix: prefix})
	if err != nil {
		tb.Fatalf("Open(%q): %v", srv.DSN(), err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return st
}

// unreachable returns a Store on a loopback port nothing listens on.
func unreachable(tb testing.TB) *Store {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	st, err := Open(addr, Options{})
	if err != nil {
		tb.Fatalf("Open(%q): %v", addr, err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

func request(cluster, token string, maxWorkerID int64) workerlease.AcquireRequest {
	return workerlease.AcquireRequest{
		Cluster: cluster, MaxWorkerID: maxWorkerID, Token: token, Holder: "etcdlease_test",
		TTL: time.Minute, NowMS: time.Now().UnixMilli(),
	}
}

func mustAcquire(tb testing.TB, st *Store, req workerlease.AcquireRequest) workerlease.Lease {
	tb.Helper()
	l, err := st.Acquire(tb.Context(), req)
	if err != nil {
		tb.Fatalf("Acquire(token %q): %v", req.Token, err)
	}
	return l
}

// waitExpired waits until etcd has ended the lease behind l: its hold key
// is gone. It reads the key rather than renewing, which would keep it alive.
func waitExpired(tb testing.TB, st *Store, l workerlease.Lease) {
	tb.Helper()
	key := st.holdKey(l.Cluster, l.WorkerID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := st.c.Get(tb.Context(), key, clientv3.WithCountOnly())
		if err != nil {
			tb.Fatalf("get %s: %v", key, err)
		}
		if resp.Count == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("lease of worker %d (expires %v) still held at %v", l.WorkerID, l.ExpiresAt, time.Now())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refusals are the errors that tell a holder to give up its worker ID; a
// fault must never be one of them.
var refusals = []error{
	workerlease.ErrNoWorkerID, workerlease.ErrNotAssigned, workerlease.ErrTokenMismatch,
	workerlease.ErrLeaseExpired, snowflake.ErrLayoutMismatch, workerlease.ErrInvalidToken,
	workerlease.ErrInvalidCluster, workerlease.ErrInvalidWorkerID, workerlease.ErrInvalidConfig,
}

func isRefusal(err error) bool {
	for _, r := range refusals {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}
