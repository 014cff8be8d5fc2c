//go:build unix

package store_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// asUserEnv, in a child run of this test, names the directory of its files.
const asUserEnv = "IDALLOC_TEST_READONLY_AS_USER_DIR"

// nobody is the uid (and gid) the child runs as when the test runs as root.
const nobody = 65534

// TestOpenSQLiteReadOnlyAsAnotherUser is the Docker migrate recipe: the
// SQLite file and its directory belong to another user, so SQLite can write
// neither the file nor the -shm index next to it. A file stopped gracefully
// (no -wal content) is read as immutable; one with transactions left in its
// -wal is refused, since reading it without them would miss IDs issued. As
// root the test runs itself again as uid 65534, because root may write
// anywhere.
func TestOpenSQLiteReadOnlyAsAnotherUser(t *testing.T) {
	if dir := os.Getenv(asUserEnv); dir != "" {
		checkReadOnlyFiles(t, dir)
		return
	}
	dir, err := os.MkdirTemp("", "idalloc-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	clean := filepath.Join(dir, "clean")
	withWAL := filepath.Join(dir, "wal")
	for _, d := range []string{clean, withWAL} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sqliteFile(t, clean)
	// A copy taken while a store has the file open: its transactions are
	// in the -wal file only, and there is no -shm.
	src := filepath.Join(t.TempDir(), "idalloc.db")
	st, err := store.OpenSQLite(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTag(t.Context(), segment.Tag{AppTag: "orders", Step: 10}); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal"} {
		copyFile(t, src+suffix, filepath.Join(withWAL, "idalloc.db"+suffix))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	if os.Geteuid() != 0 {
		readOnlyDir(t, clean)
		readOnlyDir(t, withWAL)
		checkReadOnlyFiles(t, dir)
		return
	}
	// The files stay root's and 0644 in 0755 directories: readable, not
	// writable, by nobody. The test binary is copied where nobody can run it.
	bin := filepath.Join(dir, "store.test")
	copyFile(t, os.Args[0], bin)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestOpenSQLiteReadOnlyAsAnotherUser$", "-test.v")
	cmd.Env = append(os.Environ(), asUserEnv+"="+dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(err.Error(), "operation not permitted") {
			t.Skipf("cannot run as uid %d here: %v", nobody, err)
		}
		t.Fatalf("run as uid %d: %v\n%s", nobody, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestOpenSQLiteReadOnlyAsAnotherUser") {
		t.Fatalf("run as uid %d did not pass:\n%s", nobody, out)
	}
}

// checkReadOnlyFiles opens the files made by the test in dir.
func checkReadOnlyFiles(t *testing.T, dir string) {
	r, err := store.OpenSQLiteReadOnly(t.Context(), filepath.Join(dir, "clean", "idalloc.db"))
	if err != nil {
		t.Fatalf("OpenSQLiteReadOnly of a file stopped gracefully: %v", err)
	}
	wantOrders(t, r)
	if err := r.Close(); err != nil {
		t.Error(err)
	}
	_, err = store.OpenSQLiteReadOnly(t.Context(), filepath.Join(dir, "wal", "idalloc.db"))
	if err == nil || !strings.Contains(err.Error(), "-wal holds transactions") {
		t.Errorf("OpenSQLiteReadOnly of a file with transactions in its -wal: error = %v, want one naming the -wal", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
