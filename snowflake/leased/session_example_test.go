package leased_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// A process leases a worker ID, issues IDs fenced by the lease, and gives
// it back with the last timestamp used. MemoryStore stands in for
// redislease, etcdlease or store, which also record each cluster's layout
// (LayoutRecorder: see LayoutGate and CheckEachLease); one process, of one
// layout, needs no record. This is a workerlease.Session wired to a
// snowflake generator by hand, which Source does for a Keeper's sessions;
// it lives here because workerlease knows no generator, even in its tests.
func Example_session() {
	ctx := context.Background()
	layout, err := snowflake.NewLayout(time.Time{}, 10)
	if err == nil {
		err = layout.CheckLifetime(time.Now())
	}
	if err != nil {
		panic(err)
	}
	st := workerlease.NewMemoryStore(nil)
	svc, err := workerlease.NewService(st, workerlease.Config{
		Cluster: "orders", MaxWorkerID: layout.MaxWorkerID(), TTL: 30 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	sess, err := workerlease.NewSession(ctx, workerlease.SessionConfig{Service: svc})
	if err != nil {
		panic(err)
	}
	l := sess.Lease()
	gen, err := snowflake.New(snowflake.Settings{
		Layout: layout, WorkerID: l.WorkerID, StartAfterMS: l.LastTimestampMS, Fence: sess.Fence,
	})
	if err != nil {
		panic(err)
	}
	id, err := gen.Next()
	if err != nil {
		panic(err)
	}
	parts, _ := layout.Decompose(id)
	fmt.Println("worker", parts.WorkerID)

	if err := sess.Close(ctx, gen.LastTimestampMS()); err != nil {
		panic(err)
	}
	<-sess.Done()
	_, err = gen.Next()
	fmt.Println(err != nil)
	// Output:
	// worker 0
	// true
}
