package store

import (
	"context"
	"hash/fnv"
	"strconv"

	"github.com/jmoiron/sqlx"
)

// A worker ID with no row was never leased, or its row was lost: every
// row deleted, one cluster's, its own, or a restore from before it was
// made. A grant of such an ID that cannot prove the first says so
// (Lease.NoHistory), and its holder waits out any holder the store forgot
// (docs/api.md §3, §15). The proof is kept in rows of cluster "", which is
// no cluster's name (workerlease.ValidCluster refuses it), so that
// deleting a cluster's rows, or one worker ID's, leaves it:
//
//   - the genesis row (worker_id 0) says that idalloc created the table
//     empty (the SQLite file it made, the tables -init-schema made); it is
//     never written again. Deleting every row deletes it too; a table made
//     by hand from schema.sql, or by a version that marked no worker IDs
//     (its genesis row has another holder), has none, and there every
//     worker ID's first grant waits once. idalloc advance removes the rows
//     of cluster "", since a restored table may lack rows of leases
//     granted after the backup.
//   - a worker ID's mark (worker_id markSlot, holder "cluster/id") says
//     that the ID has had a row. The statement that inserts the first row
//     of an ID inserts its mark too, so no row ever exists without one.
//
// So a grant whose one statement inserts both the row and the mark (the
// mark was absent, as was the row) takes an ID that never had a row, if
// the genesis row is still there after it: else the marks may have gone
// with it. Its rows-affected alone proves the insert, as on a multi-primary
// cluster it must.

// genesisHolder marks the genesis row of a table whose worker IDs are
// marked; an earlier version's genesis row says "no row lost since".
const genesisHolder = "idalloc: created empty; every worker ID marked since"

const genesisStmt = `INSERT INTO worker_leases (cluster, worker_id, token, holder, expires_at, last_timestamp_ms)
	VALUES ('', 0, '', '` + genesisHolder + `', {now}, 0)`

// hasGenesis reports whether the genesis row is there.
func (d *db) hasGenesis(ctx context.Context, q sqlx.QueryerContext) (bool, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, d.q(`SELECT COUNT(*) FROM worker_leases
		WHERE cluster = '' AND worker_id = 0 AND holder = ?`), genesisHolder)
	return n > 0, err
}

// readMark reports whether the genesis row is there and whether cluster's
// workerID is marked, in one statement.
func (d *db) readMark(ctx context.Context, q sqlx.QueryerContext, cluster string, workerID int64) (genesis, marked bool, err error) {
	var rows []struct {
		WorkerID int64  `db:"worker_id"`
		Holder   string `db:"holder"`
	}
	err = sqlx.SelectContext(ctx, q, &rows, d.q(`SELECT worker_id, holder FROM worker_leases
		WHERE cluster = '' AND worker_id IN (0, ?)`), markSlot(cluster, workerID))
	for _, r := range rows {
		if r.WorkerID == 0 {
			genesis = r.Holder == genesisHolder
		} else {
			marked = true
		}
	}
	return genesis, marked, err
}

// insertRow is the INSERT of the row of cluster's workerID, whose other
// columns (token, holder, expires_at, last_timestamp_ms) are values, with
// arguments args; with mark, the same statement inserts the ID's mark. It
// returns the statement, its arguments and how many rows it inserts.
func (d *db) insertRow(cluster string, workerID int64, mark bool, values string, args ...any) (string, []any, int64) {
	stmt := `INSERT INTO worker_leases (cluster, worker_id, token, holder, expires_at, last_timestamp_ms) VALUES `
	var all []any
	rows := int64(1)
	if mark {
		stmt += `('', ?, '', ?, {now}, 0), `
		all = append(all, markSlot(cluster, workerID), cluster+"/"+strconv.FormatInt(workerID, 10))
		rows++
	}
	stmt += `(?, ?, ` + values + `)`
	return d.q(stmt), append(append(all, cluster, workerID), args...), rows
}

// markSlot is the worker_id of the mark of cluster's workerID among the
// rows of cluster "": a hash, from 1 to 2^62. Two IDs that hash alike share
// a mark, which stays safe (each is taken to have had a row once the other
// had, and more grants wait), only less precise.
func markSlot(cluster string, workerID int64) int64 {
	h := fnv.New64a()
	h.Write([]byte(cluster + "/" + strconv.FormatInt(workerID, 10)))
	return int64(h.Sum64()>>2) + 1
}
