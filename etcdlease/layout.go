package etcdlease

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idalloc/idalloc/snowflake"
)

// CheckLayout records the snowflake layout of cluster on first use and
// refuses a different one afterwards with snowflake.ErrLayoutMismatch:
// holders of one cluster with different worker bits or epochs can compose
// the same ID from different parts, and a later epoch repeats earlier IDs.
// One transaction puts the record if it is absent and otherwise reads it,
// so the first caller's layout wins and no caller acts on a record that
// another has replaced (none ever is). Other errors are faults.
func (s *Store) CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error {
	key := s.clusterPrefix(cluster) + "layout"
	want := layoutValue{EpochMS: epochMS, WorkerBits: workerBits}
	resp, err := s.c.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
	).Then(
		clientv3.OpPut(key, encode(want)),
	).Else(
		clientv3.OpGet(key),
	).Commit()
	if err != nil {
		return fmt.Errorf("check layout of cluster %q: %w", cluster, err)
	}
	if resp.Succeeded {
		return nil
	}
	var have layoutValue
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		err = decode(key, kvs[0].Value, &have)
	} else {
		err = fmt.Errorf("etcd key %q vanished between compare and read", key) // cannot happen in one transaction
	}
	if err != nil {
		return fmt.Errorf("check layout of cluster %q: %w", cluster, err)
	}
	if have != want {
		return snowflake.LayoutMismatch(cluster, have.EpochMS, have.WorkerBits, epochMS, workerBits)
	}
	return nil
}
