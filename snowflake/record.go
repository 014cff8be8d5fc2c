package snowflake

import (
	"fmt"
	"time"
)

// A cluster's layout record, kept by its lease store (docs/api.md §3),
// holds the epoch in Unix milliseconds and the worker bits, plus
// js53Record for a JS53 layout: so its record differs from any default
// layout's (worker bits 1..21) with no new field in any store, a record
// written before JS53 layouts existed is a default layout's, and a version
// that knows no JS53 layout refuses a cluster that records one.
const js53Record = 100

// RecordedWorkerBits is l's worker bits as a cluster's layout record holds
// them.
func (l Layout) RecordedWorkerBits() int {
	if l.JS53() {
		return js53Record + l.WorkerBits
	}
	return l.WorkerBits
}

// LayoutMismatch is a lease store's refusal of a layout (epochMS,
// workerBits, as RecordedWorkerBits gives them) other than the one cluster
// records: both described as a configuration names them, wrapping
// ErrLayoutMismatch.
func LayoutMismatch(cluster string, recordedEpochMS int64, recordedBits int, epochMS int64, workerBits int) error {
	return fmt.Errorf("cluster %q records %s; this instance has %s: %w",
		cluster, describeRecord(recordedEpochMS, recordedBits), describeRecord(epochMS, workerBits), ErrLayoutMismatch)
}

// describeRecord names a layout record's layout, epoch and worker bits as
// the snowflake.* keys would.
func describeRecord(epochMS int64, bits int) string {
	layout := "default"
	if bits > js53Record {
		layout, bits = "js53", bits-js53Record
	}
	return fmt.Sprintf("layout %s, epoch %s, %d worker bits", layout, time.UnixMilli(epochMS).UTC().Format(time.RFC3339Nano), bits)
}
