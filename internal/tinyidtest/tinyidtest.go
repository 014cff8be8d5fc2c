// Package tinyidtest makes databases holding a Didi Tinyid deployment's
// tables, for the tests of what reads them (store.OpenTinyid, idalloc
// migrate -from-driver tinyid):
//
//	db := tinyidtest.New(t, "mysql", `INSERT INTO tiny_id_info (biz_type, max_id, step) VALUES ('order', 7, 10)`)
//	r, err := store.OpenTinyid(ctx, "mysql", db.DSN)
//
// The tables have the columns of Tinyid's db.sql, written for each engine
// a copy of them may be on, and Sample is the rows it inserts. It is
// imported by tests only.
package tinyidtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/store/storetest"
)

// Engines are the engines New makes databases on: Tinyid's own, MySQL,
// and those a copy of its tables may be on.
var Engines = []string{"mysql", "postgres", "sqlite"}

// tables are tiny_id_info and tiny_id_token; {id} is the engine's
// auto-increment key.
var tables = []string{
	`CREATE TABLE tiny_id_info (
		id          {id},
		biz_type    VARCHAR(63) NOT NULL DEFAULT '',
		begin_id    BIGINT      NOT NULL DEFAULT 0,
		max_id      BIGINT      NOT NULL DEFAULT 0,
		step        INT         DEFAULT 0,
		delta       INT         NOT NULL DEFAULT 1,
		remainder   INT         NOT NULL DEFAULT 0,
		create_time TIMESTAMP   NOT NULL DEFAULT '2010-01-01 00:00:00',
		update_time TIMESTAMP   NOT NULL DEFAULT '2010-01-01 00:00:00',
		version     BIGINT      NOT NULL DEFAULT 0,
		UNIQUE (biz_type))`,
	`CREATE TABLE tiny_id_token (
		id          {id},
		token       VARCHAR(255) NOT NULL DEFAULT '',
		biz_type    VARCHAR(63)  NOT NULL DEFAULT '',
		remark      VARCHAR(255) NOT NULL DEFAULT '',
		create_time TIMESTAMP    NOT NULL DEFAULT '2010-01-01 00:00:00',
		update_time TIMESTAMP    NOT NULL DEFAULT '2010-01-01 00:00:00')`,
}

// Sample is the rows Tinyid's own db.sql (tinyid-server/db.sql) inserts,
// as a new deployment has them: the biz_types test and test_odd (delta 2,
// remainder 1: the odd numbers), and the token
// 0f673adf80504e2eaa552f5d791b644c allowed both, a row each.
var Sample = []string{
	`INSERT INTO tiny_id_info (id, biz_type, begin_id, max_id, step, delta, remainder, create_time, update_time, version) VALUES
		(1, 'test', 1, 1, 100000, 1, 0, '2018-07-21 23:52:58', '2018-07-22 23:19:27', 1),
		(2, 'test_odd', 1, 1, 100000, 2, 1, '2018-07-21 23:52:58', '2018-07-23 00:39:24', 3)`,
	`INSERT INTO tiny_id_token (id, token, biz_type, remark, create_time, update_time) VALUES
		(1, '0f673adf80504e2eaa552f5d791b644c', 'test', '1', '2017-12-14 16:36:46', '2017-12-14 16:36:48'),
		(2, '0f673adf80504e2eaa552f5d791b644c', 'test_odd', '1', '2017-12-14 16:36:46', '2017-12-14 16:36:48')`,
}

var autoIncrement = map[string]string{
	"mysql":    "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
	"postgres": "BIGSERIAL PRIMARY KEY",
	"sqlite":   "INTEGER PRIMARY KEY AUTOINCREMENT",
}

// New makes an empty database on engine (one of Engines) with Tinyid's
// tables, runs stmts on it (its rows), and returns it; DSN is as
// -from-dsn takes it, a file path for sqlite. The database is removed at
// tb's cleanup. It skips tb when the engine cannot run here (see
// storetest).
func New(tb testing.TB, engine string, stmts ...string) storetest.DB {
	tb.Helper()
	db := storetest.DB{Driver: engine}
	switch engine {
	case "mysql":
		db.DSN = storetest.MySQLDSN(tb)
	case "postgres":
		db.DSN = storetest.PostgresDSN(tb)
	case "sqlite":
		db.DSN = filepath.Join(tb.TempDir(), "tinyid.db")
	default:
		tb.Fatalf("tinyidtest: unknown engine %q", engine)
	}
	var all []string
	for _, ddl := range tables {
		all = append(all, strings.ReplaceAll(ddl, "{id}", autoIncrement[engine]))
	}
	db.Exec(tb, append(all, stmts...)...)
	return db
}
