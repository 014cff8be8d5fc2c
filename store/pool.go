package store

import "database/sql"

// DB returns the connection pool under the store, for its figures
// (sql.DBStats, as client_golang's collectors.NewDBStatsCollector exports
// them). Statements must go through the store's methods, never through it:
// they carry the store's guarantees.
func (d *db) DB() *sql.DB { return d.x.DB }
