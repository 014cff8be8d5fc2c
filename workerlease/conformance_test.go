package workerlease_test

import (
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
	"github.com/idalloc/idalloc/workerlease/leasetest"
)

// TestMemoryStoreConformance runs the suite every lease store passes. Each
// namespace is one MemoryStore, shared by its handles as one process's
// goroutines share it; it has no server to lose, so no outage case.
func TestMemoryStoreConformance(t *testing.T) {
	leasetest.Run(t, leasetest.Target{
		Fresh: func(testing.TB) leasetest.Namespace {
			m := workerlease.NewMemoryStore(nil)
			return leasetest.Namespace{
				Open:          func(testing.TB) workerlease.Store { return m },
				Forget:        func(testing.TB) { m.Forget() },
				ForgetCluster: func(_ testing.TB, cluster string) { m.ForgetCluster(cluster) },
				ForgetWorker:  func(_ testing.TB, cluster string, workerID int64) { m.ForgetWorker(cluster, workerID) },
			}
		},
		Genesis: true, // a new MemoryStore knows it began empty
		TTL:     400 * time.Millisecond,
	})
}
