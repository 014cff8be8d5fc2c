package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// galeraNode is one mariadbd of the cluster. Its ports are fixed for its
// whole life, so a restarted node rejoins where it was.
type galeraNode struct {
	n        int // 1, 2, 3
	dir      string
	cnf      string
	logPath  string
	port     int
	uid, gid uint32
	mariadbd string
	admin    *sql.DB

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd is reaped
}

// prepare writes the node's defaults file and makes its directories, owned
// by the mysql user.
func (n *galeraNode) prepare(ports [4]int, gcomm string) error {
	data, tmp := filepath.Join(n.dir, "data"), filepath.Join(n.dir, "tmp")
	for _, d := range []string{n.dir, data, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.Chown(d, int(n.uid), int(n.gid)); err != nil {
			return err
		}
	}
	g, ist, sst := ports[1], ports[2], ports[3]
	cnf := fmt.Sprintf(`[mysqld]
datadir=%s
tmpdir=%s
socket=%s
pid-file=%s
log-error=%s
port=%d
bind-address=127.0.0.1
skip-name-resolve
max-connections=400
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_flush_log_at_trx_commit=0
innodb_buffer_pool_size=32M
innodb_log_file_size=8M
innodb_log_buffer_size=4M
innodb_doublewrite=0
wsrep_on=ON
wsrep_provider=%s
wsrep_cluster_name=idalloc_e2e
wsrep_cluster_address=gcomm://%s
wsrep_node_name=node%d
wsrep_node_address=127.0.0.1:%d
wsrep_node_incoming_address=127.0.0.1:%d
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=64M"
wsrep_sst_receive_address=127.0.0.1:%d
wsrep_sst_method=rsync
`, data, tmp, filepath.Join(n.dir, "mysqld.sock"), filepath.Join(n.dir, "mysqld.pid"), n.logPath,
		n.port, galeraProvider, gcomm, n.n, g, n.port, g, ist, sst)
	if err := os.WriteFile(n.cnf, []byte(cnf), 0o644); err != nil {
		return err
	}
	var err error
	n.admin, err = sql.Open("mysql", n.dsn("")+"?timeout=2s&readTimeout=10s&writeTimeout=10s")
	if err == nil {
		n.admin.SetMaxOpenConns(4)
		n.admin.SetConnMaxIdleTime(5 * time.Second)
	}
	return err
}

// attr runs a node's processes as the mysql user; they die with the test
// process (the parent-death signal is set after the credentials change).
func (n *galeraNode) attr() *syscall.SysProcAttr {
	a := childAttr()
	a.Credential = &syscall.Credential{Uid: n.uid, Gid: n.gid}
	return a
}

// dsn is the plain go-sql-driver DSN of database name on node n, as root.
func (n *galeraNode) dsn(name string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", n.port, name)
}

func (n *galeraNode) logTail(lines int) string {
	b, _ := os.ReadFile(n.logPath)
	return tail(b, lines)
}

// start starts mariadbd with the node's defaults file and extra options.
func (n *galeraNode) start(extra ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.done:
		default:
			return fmt.Errorf("galera node %d: start while pid %d runs", n.n, n.cmd.Process.Pid)
		}
	}
	cmd := exec.Command(n.mariadbd, append([]string{"--defaults-file=" + n.cnf}, extra...)...)
	cmd.Dir = n.dir
	cmd.SysProcAttr = n.attr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("galera node %d: start mariadbd: %w", n.n, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	return nil
}

func (n *galeraNode) running() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd, n.done
}

// state reads wsrep_local_state_comment ("Synced", "Joining", …).
func (n *galeraNode) state(ctx context.Context) (string, error) {
	var name, value string
	err := n.admin.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &value)
	return value, err
}

// waitSynced polls the node until it reports Synced, up to timeout.
func (n *galeraNode) waitSynced(timeout time.Duration) error {
	cmd, done := n.running()
	deadline := time.Now().Add(timeout)
	var last string
	var err error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last, err = n.state(ctx)
		cancel()
		if err == nil && last == "Synced" {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("galera node %d: mariadbd exited (%v) before Synced:\n%s", n.n, cmd.ProcessState, n.logTail(20))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("galera node %d: not Synced after %v (state %q, %v):\n%s", n.n, timeout, last, err, n.logTail(20))
		}
	}
}

// kill9 kills the node's mariadbd with SIGKILL, by PID, and reaps it.
func (n *galeraNode) kill9() error {
	cmd, done := n.running()
	if cmd == nil {
		return fmt.Errorf("galera node %d: not started", n.n)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("galera node %d: SIGKILL pid %d: %w", n.n, cmd.Process.Pid, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("galera node %d: pid %d not reaped 10s after SIGKILL", n.n, cmd.Process.Pid)
	}
}

var recoveredPosition = regexp.MustCompile(`WSREP: Recovered position: ([0-9a-f-]{36}:-?[0-9]+)`)

// restart starts a killed node again. It first recovers the node's last
// committed position (mariadbd --wsrep-recover) and passes it on with
// --wsrep-start-position, so the node can rejoin by incremental transfer;
// without a position it takes a full state transfer. It returns the
// position used ("" for none) and how long the recovery took; the caller
// waits for Synced.
func (n *galeraNode) restart() (pos string, recovery time.Duration, err error) {
	if cmd, done := n.running(); cmd != nil {
		select {
		case <-done:
		default:
			return "", 0, fmt.Errorf("galera node %d: restart while pid %d runs", n.n, cmd.Process.Pid)
		}
	}
	recoverLog := filepath.Join(n.dir, "recover.err")
	_ = os.Remove(recoverLog)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	rec := exec.CommandContext(ctx, n.mariadbd, "--defaults-file="+n.cnf, "--wsrep-recover", "--log-error="+recoverLog)
	rec.Dir = n.dir
	rec.SysProcAttr = n.attr()
	out, err := rec.CombinedOutput()
	recovery = time.Since(began)
	logged, _ := os.ReadFile(recoverLog)
	if err != nil {
		return "", recovery, fmt.Errorf("galera node %d: mariadbd --wsrep-recover: %v\n%s%s", n.n, err, tail(out, 10), tail(logged, 10))
	}
	if m := recoveredPosition.FindSubmatch(logged); m != nil && !strings.HasSuffix(string(m[1]), ":-1") {
		pos = string(m[1])
	}
	var extra []string
	if pos != "" {
		extra = []string{"--wsrep-start-position=" + pos}
	}
	return pos, recovery, n.start(extra...)
}

// stop sends SIGTERM and waits, then SIGKILL after 20s.
func (n *galeraNode) stop() {
	cmd, done := n.running()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
