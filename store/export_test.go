package store

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// FixClock makes every statement of st read the database's clock as at: the
// expression that asks the database for the time (NOW(3), PostgreSQL's
// clock_timestamp(), or SQLite's julianday('now')) is replaced by the literal value it would return then,
// of the same type. It exists because a database's clock cannot be moved
// for one session past 2038 (MariaDB before 11.5 caps SET timestamp at
// 2038-01-19 03:14:07 UTC), and that is exactly the instant to test. Call it
// before st is used.
func FixClock(st any, at time.Time) {
	switch s := st.(type) {
	case *MySQL:
		s.dialect.expand = mysqlExpand("CAST('" + at.UTC().Format("2006-01-02 15:04:05.000") + "' AS DATETIME(3))")
	case *SQLite:
		s.dialect.expand = sqliteExpand(strconv.FormatInt(at.UnixMilli(), 10))
	case *Postgres:
		s.dialect.expand = postgresExpand("CAST('" + at.UTC().Format("2006-01-02 15:04:05.000") + "+00' AS TIMESTAMPTZ)")
	default:
		panic(fmt.Sprintf("FixClock: %T is not a store", st))
	}
}

// ExecReadOnly runs stmt through r's connections, to show they refuse writes.
func ExecReadOnly(ctx context.Context, r *ReadOnly, stmt string) error {
	_, err := r.d.x.ExecContext(ctx, stmt)
	return err
}
