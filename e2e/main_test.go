package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"github.com/idalloc/idalloc/internal/tier"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/idalloc/idalloc/internal/buildtest"
	"github.com/idalloc/idalloc/internal/freeport"
)

// suiteEnv is what every test of this process shares: one idalloc binary and
// one private MariaDB.
type suiteEnv struct {
	dir string // temporary root, removed by TestMain
	bin string // the idalloc binary, built without -race
	db  *mariaDB
	// mariadbd and installDB are the server binaries db was started from,
	// for the tests that start another server of their own.
	mariadbd, installDB string
}

var suite struct {
	once sync.Once
	env  *suiteEnv
	skip string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	closeRegions() // its server's files are under the suite's directory
	if suite.env != nil {
		suite.env.close()
	}
	closeGalera()
	buildtest.Cleanup()
	os.Exit(code)
}

// setup returns the shared environment, starting it on first use. It skips t
// under -short or when no MariaDB server binary exists, and fails it when the
// environment could not be started.
func setup(t *testing.T) *suiteEnv {
	t.Helper()
	tier.Full(t, "the end-to-end fault suite: MariaDB and idalloc processes")
	suite.once.Do(func() { suite.env, suite.skip, suite.err = startSuite() })
	switch {
	case suite.skip != "":
		t.Skip(suite.skip)
	case suite.err != nil:
		t.Fatalf("e2e environment: %v", suite.err)
	}
	return suite.env
}

func startSuite() (*suiteEnv, string, error) {
	mariadbd := findBinary("mariadbd", "/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd", "/usr/libexec/mariadbd")
	installDB := findBinary("mariadb-install-db", "/usr/bin/mariadb-install-db", "/usr/local/bin/mariadb-install-db")
	if mariadbd == "" || installDB == "" {
		return nil, "e2e: no mariadbd or mariadb-install-db binary (PATH, /usr/sbin, /usr/bin): skipping the end-to-end fault suite", nil
	}
	dir, err := os.MkdirTemp("", "idalloc-e2e-")
	if err != nil {
		return nil, "", err
	}
	env := &suiteEnv{dir: dir, mariadbd: mariadbd, installDB: installDB}
	if env.bin, err = buildtest.Idalloc(); err != nil {
		env.close()
		return nil, "", err
	}
	if env.db, err = startMariaDB(filepath.Join(dir, "mariadb"), mariadbd, installDB); err != nil {
		env.close()
		return nil, "", err
	}
	return env, "", nil
}

func (e *suiteEnv) close() {
	if e.db != nil {
		e.db.stop()
	}
	_ = os.RemoveAll(e.dir)
}

func findBinary(name string, fallbacks ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range fallbacks {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// mariaDB is the private MariaDB server of this test process.
type mariaDB struct {
	dir     string
	port    int
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process is reaped
	admin   *sql.DB

	mu     sync.Mutex
	frozen bool
	dbs    int
}

// innodbSmall keeps the server small so that it installs and starts in a
// few seconds; durability per commit is not what these tests are about.
var innodbSmall = []string{
	"--innodb-buffer-pool-size=32M",
	"--innodb-log-file-size=8M",
	"--innodb-log-buffer-size=4M",
	"--innodb-flush-log-at-trx-commit=2",
	"--innodb-doublewrite=0",
	"--skip-name-resolve",
}

func startMariaDB(dir, mariadbd, installDB string) (*mariaDB, error) {
	dataDir := filepath.Join(dir, "data")
	tmpDir := filepath.Join(dir, "tmp")
	for _, d := range []string{dataDir, tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var asRoot []string
	if os.Geteuid() == 0 {
		asRoot = []string{"--user=root"}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--no-defaults", "--datadir=" + dataDir,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, asRoot...)
	args = append(args, innodbSmall...)
	install := exec.CommandContext(ctx, installDB, args...)
	install.Dir = dir
	install.SysProcAttr = childAttr()
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, tail(out, 20))
	}

	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	m := &mariaDB{dir: dir, port: port, logPath: filepath.Join(dir, "mariadbd.err"), done: make(chan struct{})}
	args = append([]string{"--no-defaults",
		"--datadir=" + dataDir,
		"--tmpdir=" + tmpDir,
		"--socket=" + filepath.Join(dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--log-error=" + m.logPath,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--skip-networking=0",
		"--max-connections=400",
	}, asRoot...)
	args = append(args, innodbSmall...)
	m.cmd = exec.Command(mariadbd, args...)
	m.cmd.Dir = dir
	m.cmd.SysProcAttr = childAttr()
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.done)
	}()

	m.admin, err = sql.Open("mysql", m.dsn("")+"?timeout=2s&readTimeout=10s&writeTimeout=10s")
	if err != nil {
		m.stop()
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = m.admin.PingContext(pctx)
		pcancel()
		if err == nil {
			return m, nil
		}
		select {
		case <-m.done:
			m.stop()
			return nil, fmt.Errorf("mariadbd exited at start: %v\n%s", m.cmd.ProcessState, m.logTail(20))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, fmt.Errorf("mariadbd not answering on 127.0.0.1:%d after 60s: %v\n%s", port, err, m.logTail(20))
		}
	}
}

// dsn is the go-sql-driver DSN of database name ("" for none) as root.
func (m *mariaDB) dsn(name string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", m.port, name)
}

func (m *mariaDB) logTail(n int) string {
	b, _ := os.ReadFile(m.logPath)
	return tail(b, n)
}

// newDatabase creates a fresh, empty database for t and returns idalloc's
// DSN for it. The schema is applied by the first idalloc (-init-schema).
func (m *mariaDB) newDatabase(t *testing.T) string {
	t.Helper()
	m.mu.Lock()
	m.dbs++
	n := m.dbs
	m.mu.Unlock()
	name := fmt.Sprintf("e2e_%d_%s", n, sanitize(t.Name()))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := m.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return m.dsn(name)
}

// maxID reads a tag's max_id in the database of dsn.
func (m *mariaDB) maxID(t *testing.T, dsn, tag string) int64 {
	t.Helper()
	name := dsn[strings.LastIndexByte(dsn, '/')+1:]
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var v int64
	if err := m.admin.QueryRowContext(ctx, "SELECT max_id FROM "+name+".segments WHERE app_tag = ?", tag).Scan(&v); err != nil {
		t.Fatalf("read max_id of %q: %v", tag, err)
	}
	return v
}

// freeze stops the server with SIGSTOP; thaw resumes it. t's cleanup thaws
// it whatever happens, so a failing test never leaves it frozen for the next.
func (m *mariaDB) freeze(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP mariadbd (pid %d): %v", m.cmd.Process.Pid, err)
	}
	m.frozen = true
	t.Cleanup(m.thawQuietly)
}

func (m *mariaDB) thaw(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT mariadbd (pid %d): %v", m.cmd.Process.Pid, err)
	}
	m.frozen = false
}

func (m *mariaDB) thawQuietly() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.frozen {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
		m.frozen = false
	}
}

// stop shuts the server down (SIGTERM, then SIGKILL after 20s).
func (m *mariaDB) stop() {
	if m.admin != nil {
		_ = m.admin.Close()
	}
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	m.thawQuietly()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// sanitize makes a test name usable in a database name.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return b.String()
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
