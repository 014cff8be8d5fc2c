package store_test

import (
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// sqliteFile makes an idalloc SQLite file in dir with tag "orders" fetched
// once (max_id 10), closed as a graceful stop closes it.
func sqliteFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "idalloc.db")
	st, err := store.OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTag(t.Context(), segment.Tag{AppTag: "orders", Step: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fetch(t.Context(), "orders", segment.MaxUsableID, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// readOnlyDir makes dir and everything in it read-only until t's cleanup.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Chmod(filepath.Join(dir, e.Name()), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) }) // so TempDir can remove it
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// wantOrders fails t unless r lists tag "orders" at max_id 10.
func wantOrders(t *testing.T, r *store.ReadOnly) {
	t.Helper()
	tags, err := r.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	for _, tg := range tags {
		if tg.AppTag == "orders" {
			if tg.MaxID != 10 || tg.Step != 10 {
				t.Errorf("orders got max_id %d, step %d; want 10, 10", tg.MaxID, tg.Step)
			}
			return
		}
	}
	t.Errorf("Tags = %+v, want orders among them", tags)
}

func TestOpenSQLiteReadOnly(t *testing.T) {
	t.Run("a read-only file is read and left unchanged", func(t *testing.T) {
		dir := t.TempDir()
		path := sqliteFile(t, dir)
		readOnlyDir(t, dir)
		before := fileSum(t, path)
		r, err := store.OpenSQLiteReadOnly(t.Context(), path)
		if err != nil {
			t.Fatalf("OpenSQLiteReadOnly: %v", err)
		}
		wantOrders(t, r)
		if lts, err := r.LeaseTimestamps(t.Context()); err != nil || len(lts) != 0 {
			t.Errorf("LeaseTimestamps = %v, %v; want none", lts, err)
		}
		// SQLite itself refuses, whoever runs the test (root too).
		if err := store.ExecReadOnly(t.Context(), r, `UPDATE segments SET max_id = 0`); err == nil {
			t.Error("UPDATE through the read-only handle succeeded")
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if fileSum(t, path) != before {
			t.Error("the database file changed")
		}
	})
	t.Run("a missing file is not created", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "typo.db")
		if _, err := store.OpenSQLiteReadOnly(t.Context(), path); err == nil {
			t.Fatal("OpenSQLiteReadOnly of a missing file: no error")
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stat after the open: %v, want the file still missing", err)
		}
	})
	t.Run("a seed-style file with segments only has no lease history", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "seed.db")
		rawSQLite(t, path, `CREATE TABLE segments (app_tag TEXT PRIMARY KEY, max_id INTEGER, step INTEGER,
			description TEXT, update_time INTEGER);
			INSERT INTO segments VALUES ('orders', 10, 10, NULL, NULL)`)
		r, err := store.OpenSQLiteReadOnly(t.Context(), path)
		if err != nil {
			t.Fatalf("OpenSQLiteReadOnly: %v", err)
		}
		defer r.Close()
		wantOrders(t, r)
		lts, err := r.LeaseTimestamps(t.Context())
		if err != nil || len(lts) != 0 {
			t.Errorf("LeaseTimestamps = %v, %v; want none", lts, err)
		}
		layouts, err := r.Layouts(t.Context())
		if err != nil || len(layouts) != 0 {
			t.Errorf("Layouts = %v, %v; want none", layouts, err)
		}
	})
	t.Run("a file without segments is refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "other.db")
		rawSQLite(t, path, `CREATE TABLE other (a INTEGER)`)
		_, err := store.OpenSQLiteReadOnly(t.Context(), path)
		if err == nil || !strings.Contains(err.Error(), "no segments table") {
			t.Errorf("OpenSQLiteReadOnly error = %v, want one naming the missing segments table", err)
		}
	})
}

// rawSQLite runs script on a new SQLite file at path.
func rawSQLite(t *testing.T, path, script string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), script); err != nil {
		t.Fatal(err)
	}
}

// mysqlRaw runs stmts on dsn.
func mysqlRaw(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	mysqlExec(t, dsn, "+00:00", stmts...)
}

func isReadOnlyRefusal(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
}

// leafTable is the DDL in the README of Meituan-Dianping/Leaf.
const leafTable = `CREATE TABLE leaf_alloc (
  biz_tag     varchar(128) NOT NULL DEFAULT '',
  max_id      bigint(20)   NOT NULL DEFAULT '1',
  step        int(11)      NOT NULL,
  description varchar(256) DEFAULT NULL,
  update_time timestamp    NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
) ENGINE=InnoDB`

func TestOpenMySQLReadOnly(t *testing.T) {
	t.Run("reads idalloc's tables and refuses writes", func(t *testing.T) {
		db := storetest.MySQL().NewDB(t)
		st := db.Open(t)
		if err := st.CreateTag(t.Context(), segment.Tag{AppTag: "orders", Step: 10, Start: 11}); err != nil {
			t.Fatal(err)
		}
		r, err := store.OpenMySQLReadOnly(t.Context(), db.DSN)
		if err != nil {
			t.Fatalf("OpenMySQLReadOnly: %v", err)
		}
		defer r.Close()
		wantOrders(t, r)
		if err := store.ExecReadOnly(t.Context(), r, `UPDATE segments SET max_id = 0`); !isReadOnlyRefusal(err) {
			t.Errorf("UPDATE through the read-only handle: error = %v, want 1792", err)
		}
	})
	t.Run("reads TIMESTAMP columns without asking to convert them", func(t *testing.T) {
		dsn := storetest.MySQLDSN(t)
		mysqlExec(t, dsn, "+08:00", oldSchema...)
		r, err := store.OpenMySQLReadOnly(t.Context(), dsn)
		if err != nil {
			t.Fatalf("OpenMySQLReadOnly: %v", err)
		}
		defer r.Close()
		tags, err := r.Tags(t.Context())
		if err != nil || len(tags) != 1 || !tags[0].UpdateTime.Equal(written) {
			t.Errorf("Tags = %+v, %v; want orders with update_time %v", tags, err, written)
		}
	})
	t.Run("a Leaf database is named as such", func(t *testing.T) {
		dsn := storetest.MySQLDSN(t)
		mysqlRaw(t, dsn, leafTable)
		_, err := store.OpenMySQLReadOnly(t.Context(), dsn)
		if err == nil || !strings.Contains(err.Error(), "leaf_alloc") {
			t.Errorf("OpenMySQLReadOnly error = %v, want one naming Leaf's leaf_alloc", err)
		}
	})
}

func TestOpenLeaf(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	mysqlRaw(t, dsn, leafTable,
		`INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES
			('orders', 10, 10, NULL), ('has space', 3000, 100, 'x')`)
	r, err := store.OpenLeaf(t.Context(), dsn)
	if err != nil {
		t.Fatalf("OpenLeaf: %v", err)
	}
	defer r.Close()
	wantOrders(t, r)
	tags, err := r.Tags(t.Context())
	if err != nil || len(tags) != 2 || tags[0].AppTag != "has space" || tags[0].MaxID != 3000 {
		t.Errorf("Tags = %+v, %v; want every row, names as they are", tags, err)
	}
	if lts, err := r.LeaseTimestamps(t.Context()); err != nil || len(lts) != 0 {
		t.Errorf("LeaseTimestamps = %v, %v; want none", lts, err)
	}
	if err := store.ExecReadOnly(t.Context(), r, `UPDATE leaf_alloc SET max_id = 0`); !isReadOnlyRefusal(err) {
		t.Errorf("UPDATE through the Leaf handle: error = %v, want 1792", err)
	}

	idalloc := storetest.MySQL().NewDB(t)
	if _, err := store.OpenLeaf(t.Context(), idalloc.DSN); err == nil || !strings.Contains(err.Error(), "no leaf_alloc table") {
		t.Errorf("OpenLeaf on an idalloc database: error = %v, want no leaf_alloc table", err)
	}
}
