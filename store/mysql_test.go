package store

import (
	"strings"
	"testing"
	"time"
)

func TestMySQLConfigForcesWhatTheStoreNeeds(t *testing.T) {
	for _, tc := range []struct {
		name                               string
		dsn                                string
		wantTimeout, wantRead, wantWrite   time.Duration
		wantDBName, wantUser, wantPassword string
	}{
		{
			name:        "bare DSN gets defaults",
			dsn:         "root@tcp(127.0.0.1:3306)/test",
			wantTimeout: defaultDialTimeout, wantRead: defaultReadTimeout, wantWrite: defaultWriteTimeout,
			wantDBName: "test", wantUser: "root",
		},
		{
			name: "contrary settings are overridden, timeouts kept",
			dsn: "app:s3cret@tcp(db:3306)/idalloc?parseTime=false&loc=Local&clientFoundRows=false&interpolateParams=false" +
				"&time_zone=%27%2B08%3A00%27&timeout=1s&readTimeout=2s&writeTimeout=4s",
			wantTimeout: time.Second, wantRead: 2 * time.Second, wantWrite: 4 * time.Second,
			wantDBName: "idalloc", wantUser: "app", wantPassword: "s3cret",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := mysqlConfig(tc.dsn)
			if err != nil {
				t.Fatalf("mysqlConfig: %v", err)
			}
			if !cfg.ParseTime || cfg.Loc != time.UTC || !cfg.ClientFoundRows || !cfg.InterpolateParams {
				t.Errorf("parseTime, loc, clientFoundRows, interpolateParams = %v, %v, %v, %v; want true, UTC, true, true",
					cfg.ParseTime, cfg.Loc, cfg.ClientFoundRows, cfg.InterpolateParams)
			}
			if got, want := cfg.Params["time_zone"], "'+00:00'"; got != want {
				t.Errorf("time_zone = %s, want %s", got, want)
			}
			if cfg.Timeout != tc.wantTimeout || cfg.ReadTimeout != tc.wantRead || cfg.WriteTimeout != tc.wantWrite {
				t.Errorf("timeouts = %v/%v/%v, want %v/%v/%v", cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout,
					tc.wantTimeout, tc.wantRead, tc.wantWrite)
			}
			if cfg.DBName != tc.wantDBName || cfg.User != tc.wantUser || cfg.Passwd != tc.wantPassword {
				t.Errorf("db, user, password = %q, %q, %q; want %q, %q, %q", cfg.DBName, cfg.User, cfg.Passwd,
					tc.wantDBName, tc.wantUser, tc.wantPassword)
			}
		})
	}
}

func TestOpenMySQLErrorsHideThePassword(t *testing.T) {
	for _, dsn := range []string{
		"root:s3cret@tcp(127.0.0.1:3306",           // unterminated address
		"root:s3cret@tcp(127.0.0.1:1)/test",        // nothing listens on port 1
		"root:s3cret@tcp(127.0.0.1:3306)/test?x=%", // bad escape
	} {
		_, err := OpenMySQL(t.Context(), dsn, MySQLOptions{})
		if err == nil {
			t.Errorf("OpenMySQL(%q): no error", dsn)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenMySQL error %q contains the password", err)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	got := splitStatements(schemaMySQL)
	wantPrefixes := []string{
		"CREATE TABLE IF NOT EXISTS segments (",
		"INSERT IGNORE INTO segments",
		"CREATE TABLE IF NOT EXISTS segment_periods (",
		"CREATE TABLE IF NOT EXISTS worker_leases (",
		"CREATE TABLE IF NOT EXISTS worker_layouts (",
		"CREATE TABLE IF NOT EXISTS alloc_tokens (",
		"CREATE TABLE IF NOT EXISTS audit_log (",
		"CREATE TABLE IF NOT EXISTS idalloc_region (",
	}
	if len(got) != len(wantPrefixes) {
		t.Fatalf("schema.sql splits into %d statements, want %d: %q", len(got), len(wantPrefixes), got)
	}
	for i, stmt := range got {
		if !strings.HasPrefix(stmt, wantPrefixes[i]) || strings.HasSuffix(stmt, ";") {
			t.Errorf("statement %d = %q, want it to start with %q and drop its ';'", i, stmt, wantPrefixes[i])
		}
	}
}
