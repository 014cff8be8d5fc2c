// Package pgtest runs private PostgreSQL servers for tests that kill,
// promote or replicate one: a primary with its own data directory, socket
// directory and loopback port, and streaming standbys cloned from it with
// pg_basebackup, synchronous or not. Tests that fail a database over use
// these, never the PostgreSQL shared on the machine.
//
//	p := pgtest.Start(t)                 // skips t when PostgreSQL is not installed
//	s := p.AddStandby(t, pgtest.Sync)    // the primary waits for its flush
//	dsn := pgtest.MultiHost("idalloc", p, s) // target_session_attrs=read-write
//	p.Kill()                             // kill -9 the primary's postmaster
//	s.Promote(t)                         // the standby takes writes
//
// PostgreSQL refuses to run as root; run as root, the servers run as the
// postgres user (the data directories are made for it). Each server is
// started directly (postgres -D), so the test owns its PID; the kernel
// kills it if the test binary dies without its cleanups.
//
// It is imported by tests only.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/idalloc/idalloc/internal/freeport"
)

// startTimeout bounds the wait for a started server to accept connections.
const startTimeout = 60 * time.Second

// Replication is how a standby's primary waits for it.
type Replication int

const (
	// Async: the primary commits without waiting for the standby, so a
	// failover may lose the last commits (a store that forgets).
	Async Replication = iota
	// Sync: the primary's commit waits until the standby has flushed it
	// (synchronous_standby_names, synchronous_commit on).
	Sync
)

// Server is one private PostgreSQL server.
type Server struct {
	bin  string // the directory of postgres, initdb, pg_basebackup
	dir  string // the data directory
	sock string // the socket directory
	port int
	name string // application_name, for synchronous_standby_names
	cred *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd is reaped
}

// Start initialises and starts a primary for tb, killed at tb's cleanup. It
// skips tb when PostgreSQL's server binaries are not installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := binDir()
	if bin == "" {
		tb.Skip("pgtest: no PostgreSQL server binaries (initdb, postgres) found: skipping the private PostgreSQL")
	}
	s := newServer(tb, bin, "primary")
	s.run(tb, "initdb", "-D", s.dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	s.configure(tb, "wal_level = replica", "max_wal_senders = 10", "hot_standby = on",
		"synchronous_commit = on")
	hba := "local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(s.dir, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.chown(tb, filepath.Join(s.dir, "pg_hba.conf"))
	s.start(tb)
	return s
}

// AddStandby clones s with pg_basebackup into a standby streaming from it
// and starts it. With Sync, s then waits for this standby's flush before a
// commit returns (the standby named in synchronous_standby_names).
func (s *Server) AddStandby(tb testing.TB, r Replication) *Server {
	tb.Helper()
	st := newServer(tb, s.bin, "standby"+strconv.Itoa(s.port))
	// -R writes standby.signal and primary_conninfo; the application name
	// is what synchronous_standby_names matches.
	s.run(tb, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres",
		"-D", st.dir, "-X", "stream", "-R", "--no-sync",
		"-d", "application_name="+st.name)
	st.configure(tb, "port = "+strconv.Itoa(st.port), "unix_socket_directories = '"+st.sock+"'")
	st.start(tb)
	if r == Sync {
		s.Exec(tb, fmt.Sprintf(`ALTER SYSTEM SET synchronous_standby_names = '"%s"'`, st.name))
		s.Exec(tb, `SELECT pg_reload_conf()`)
		s.waitFor(tb, fmt.Sprintf(`SELECT count(*) FROM pg_stat_replication WHERE application_name = '%s' AND sync_state = 'sync'`, st.name))
	} else {
		s.waitFor(tb, fmt.Sprintf(`SELECT count(*) FROM pg_stat_replication WHERE application_name = '%s' AND state = 'streaming'`, st.name))
	}
	return st
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// DSN is a pgx URL for database db on this server alone.
func (s *Server) DSN(db string) string {
	return "postgres://postgres@" + s.Addr() + "/" + db + "?sslmode=disable"
}

// MultiHost is a pgx URL for database db naming every server, in order,
// that connects only to the one taking writes (the primary, or a promoted
// standby).
func MultiHost(db string, servers ...*Server) string {
	hosts := make([]string, len(servers))
	for i, s := range servers {
		hosts[i] = s.Addr()
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/" + db +
		"?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

// Exec runs statement on the server's postgres database, failing tb on error.
func (s *Server) Exec(tb testing.TB, statement string) {
	tb.Helper()
	db := s.open(tb)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, statement); err != nil {
		tb.Fatalf("pgtest %s: %s: %v", s.name, statement, err)
	}
}

// Kill kills the server's postmaster with SIGKILL and reaps it. Its
// backends notice their postmaster is gone and exit; the data directory is
// left as a crash leaves it. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd, s.done = nil, nil
}

// Restart starts a killed server again on its data directory and port: it
// recovers as after a crash (a standby goes on recovering, whether or not
// its primary answers).
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Kill()
	s.start(tb)
}

// Promote ends a standby's recovery: it takes writes once Promote returns.
func (s *Server) Promote(tb testing.TB) {
	tb.Helper()
	s.Exec(tb, `SELECT pg_promote(true, 60)`)
}

func newServer(tb testing.TB, bin, name string) *Server {
	tb.Helper()
	port, err := freeport.Get()
	if err != nil {
		tb.Fatal(err)
	}
	// Not tb.TempDir: its parent is private to root, and the server may
	// run as the postgres user.
	root, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{bin: bin, dir: filepath.Join(root, "data"), sock: root, port: port, name: name, cred: credential(tb)}
	tb.Cleanup(func() {
		s.Kill()
		if tb.Failed() {
			b, _ := os.ReadFile(filepath.Join(root, "server.log"))
			tb.Logf("--- pgtest %s: last lines of its log:\n%s", name, tail(string(b), 30))
		}
		_ = os.RemoveAll(root)
	})
	if err := os.Chmod(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	s.chown(tb, root)
	return s
}

// configure appends lines to postgresql.conf (later lines win), after the
// settings every private server has.
func (s *Server) configure(tb testing.TB, lines ...string) {
	tb.Helper()
	base := []string{
		"port = " + strconv.Itoa(s.port), "listen_addresses = '127.0.0.1'",
		"unix_socket_directories = '" + s.sock + "'",
		// fsync off: the tests kill processes, not machines; the OS keeps
		// what a killed server wrote.
		"fsync = off", "full_page_writes = off", "shared_buffers = 16MB", "max_connections = 100",
		"wal_sender_timeout = 5s", "wal_receiver_status_interval = 1s",
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + strings.Join(append(base, lines...), "\n") + "\n"); err != nil {
		tb.Fatal(err)
	}
}

func (s *Server) start(tb testing.TB) {
	tb.Helper()
	logf, err := os.OpenFile(filepath.Join(s.sock, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("pgtest %s: start postgres: %v", s.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	for {
		db := s.open(tb)
		err := db.PingContext(context.Background())
		db.Close()
		if err == nil {
			return
		}
		select {
		case <-done:
			tb.Fatalf("pgtest %s: postgres exited at start on port %d", s.name, s.port)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pgtest %s: not answering on %s after %v: %v", s.name, s.Addr(), startTimeout, err)
		}
	}
}

// waitFor polls query until it returns a count above 0.
func (s *Server) waitFor(tb testing.TB, query string) {
	tb.Helper()
	db := s.open(tb)
	defer db.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		var n int
		err := db.QueryRowContext(context.Background(), query).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pgtest %s: %s: still 0 after %v (err %v)", s.name, query, startTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) open(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("pgx", s.DSN("postgres")+"&connect_timeout=2")
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// run runs a PostgreSQL tool as the server's user, failing tb with its output.
func (s *Server) run(tb testing.TB, tool string, args ...string) {
	tb.Helper()
	cmd := exec.Command(filepath.Join(s.bin, tool), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Dir = s.sock
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("pgtest: %s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
}

func (s *Server) chown(tb testing.TB, path string) {
	tb.Helper()
	if s.cred == nil {
		return
	}
	if err := os.Chown(path, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
		tb.Fatal(err)
	}
}

// credential is the postgres user's when the test runs as root (PostgreSQL
// refuses root), else nil: the server runs as the test's own user.
func credential(tb testing.TB) *syscall.Credential {
	tb.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Skip("pgtest: running as root and there is no postgres user to run PostgreSQL as")
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		tb.Fatal(err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// binDir finds the directory holding postgres and initdb: PATH first, then
// Debian's versioned directories, newest first.
func binDir() string {
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "initdb")); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
