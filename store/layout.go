package store

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/idalloc/idalloc/snowflake"
)

// CheckLayout records the snowflake layout of cluster on first use and
// refuses a different one afterwards, with snowflake.ErrLayoutMismatch:
// instances of one cluster with different worker bits or epochs can compose
// the same ID from different parts, and a later epoch repeats earlier IDs.
// A database without worker_layouts (made before it) is ErrMissingTables,
// naming the fix, since retrying alone will not cure it.
func (d *db) CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error {
	var have struct {
		EpochMS    int64 `db:"epoch_ms"`
		WorkerBits int   `db:"worker_bits"`
	}
	// Two statements, each committing on its own: the first instance's
	// insert wins, a duplicate means one exists, and the row never changes
	// after, so the read proves what the cluster's layout is.
	err := d.retryRaces(ctx, "layout", func() error {
		_, err := d.x.ExecContext(ctx, d.q(`INSERT INTO worker_layouts (cluster, epoch_ms, worker_bits) VALUES (?, ?, ?)`),
			cluster, epochMS, workerBits)
		if err != nil && !d.dialect.isDuplicate(err) {
			return err
		}
		return d.x.GetContext(ctx, &have, d.q(`SELECT epoch_ms, worker_bits FROM worker_layouts WHERE cluster = ?`), cluster)
	})
	if err != nil {
		// Asked only after a failure: the database answers which tables
		// it has, whatever its engine calls the error.
		if exists, qerr := d.tableExists(ctx, d.x, "worker_layouts"); qerr == nil && !exists {
			err = d.missingTablesError([]string{"worker_layouts"})
		}
		return fmt.Errorf("check layout of cluster %q: %w", cluster, err)
	}
	if have.EpochMS != epochMS || have.WorkerBits != workerBits {
		return snowflake.LayoutMismatch(cluster, have.EpochMS, have.WorkerBits, epochMS, workerBits)
	}
	return nil
}

// ClusterLayout is one cluster's recorded snowflake layout.
type ClusterLayout struct {
	Cluster    string `db:"cluster"`
	EpochMS    int64  `db:"epoch_ms"`
	WorkerBits int    `db:"worker_bits"`
}

// Layouts lists every recorded cluster layout, for moving to another store
// (idalloc migrate).
func (d *db) Layouts(ctx context.Context) ([]ClusterLayout, error) {
	var out []ClusterLayout
	if err := sqlx.SelectContext(ctx, d.x, &out, d.q(`SELECT cluster, epoch_ms, worker_bits FROM worker_layouts ORDER BY cluster`)); err != nil {
		return nil, fmt.Errorf("list cluster layouts: %w", err)
	}
	return out, nil
}
