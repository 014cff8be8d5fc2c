// Package etcdtest runs a private, single-member etcd server for tests: its
// own loopback ports, its own data directory under the test's temp dir, and
// a stop at the test's cleanup. Tests of etcd-backed code get a real etcd
// (its transactions, its leases, its clock) without sharing one with other
// tests or needing one installed as a service.
//
//	srv := etcdtest.Start(t) // skips t when no etcd binary is installed
//	st, err := etcdlease.Open(srv.DSN(), etcdlease.Options{})
//
// Stop, Kill and Restart take the server down and bring it back on the same
// ports and data, for tests of a store that is unreachable for a while;
// Wipe brings it back on the same ports with no data, for tests of a store
// that forgets.
// It is imported by tests only.
package etcdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/freeport"
)

const (
	// startTimeout bounds the wait for a started etcd to answer. A
	// single-member etcd elects itself well under a second; the rest is
	// headroom for a loaded machine.
	startTimeout = 20 * time.Second
	// stopTimeout is how long SIGTERM gets before SIGKILL.
	stopTimeout = 5 * time.Second
	// quotaBytes keeps the backend small: tests write a few keys.
	quotaBytes = 64 << 20
	// tailLines of the server's log are printed when a test fails.
	tailLines = 40
)

// Server is one private etcd process. Its methods are safe for concurrent
// use; Stop, Kill and Restart are meant for one test goroutine at a time.
type Server struct {
	bin     string
	dataDir string
	logPath string
	args    []string
	client  string // client URL, http://127.0.0.1:port

	mu    sync.Mutex
	cmd   *exec.Cmd
	exitC chan struct{} // closed when cmd has exited
}

// Start starts a private etcd for tb, waits until it answers, and stops it
// at tb's cleanup. It skips tb when no etcd binary is installed and fails tb
// when the server does not come up within 20s, printing its log.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := findBinary()
	if err != nil {
		tb.Skipf("etcdtest: no etcd binary (install etcd-server or put etcd on PATH): %v", err)
	}
	dir := tb.TempDir()
	s := &Server{
		bin:     bin,
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "etcd.log"),
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("etcdtest: last lines of the etcd log:\n%s", s.logTail())
		}
		s.Stop()
	})
	// A free port found by listening and closing can be taken by another
	// process before etcd binds it; a fresh pair of ports fixes that.
	for try := 1; ; try++ {
		_ = os.RemoveAll(s.dataDir) // a failed try may have begun one for other ports
		s.args = s.flags(freePort(tb), freePort(tb))
		err = s.start()
		if err == nil || try == 3 {
			break
		}
	}
	if err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	return s
}

// Endpoints returns the client URLs of the server.
func (s *Server) Endpoints() []string { return []string{s.client} }

// DSN returns the endpoints comma-separated, as a lease.dsn names them.
func (s *Server) DSN() string { return strings.Join(s.Endpoints(), ",") }

// Restart starts the server again after Stop or Kill, on the same ports
// and data, and waits until it answers. It fails tb, the test calling it,
// when it cannot.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.start(); err != nil {
		tb.Fatalf("etcdtest: restart: %v", err)
	}
}

// Wipe kills the server, deletes its data directory and starts it again on
// the same ports: an etcd rebuilt from nothing, which remembers no key, lease
// or revision, where its clients reconnect without being told. It fails tb
// when the server does not come back.
func (s *Server) Wipe(tb testing.TB) {
	tb.Helper()
	s.Kill()
	if err := os.RemoveAll(s.dataDir); err != nil {
		tb.Fatalf("etcdtest: wipe %s: %v", s.dataDir, err)
	}
	s.Restart(tb)
}

// Stop stops the server gracefully (SIGTERM, then SIGKILL after 5s) and
// waits for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.stop(syscall.SIGTERM) }

// Kill stops the server at once with SIGKILL, as a crash would, and waits
// for it to exit.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

func (s *Server) flags(clientPort, peerPort int) []string {
	s.client = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	args := []string{
		"--name=etcdtest",
		"--data-dir=" + s.dataDir,
		"--listen-client-urls=" + s.client,
		"--advertise-client-urls=" + s.client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=etcdtest=" + peer,
		"--initial-cluster-state=new",
		"--initial-cluster-token=etcdtest-" + strconv.Itoa(clientPort),
		"--quota-backend-bytes=" + strconv.Itoa(quotaBytes),
		// A short election timeout lets the single member lead sooner; it
		// also lowers etcd's floor on lease TTLs from 2s to 1s.
		"--heartbeat-interval=50",
		"--election-timeout=500",
		"--logger=zap",
		"--log-level=error",
		"--log-outputs=stderr",
	}
	if supportsNoFsync(s.bin) {
		// Test data need not survive a power cut; fsync is most of a
		// small write's latency.
		args = append(args, "--unsafe-no-fsync")
	}
	return args
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("etcd is already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exitC := make(chan struct{})
	go func() {
		_ = cmd.Wait() // its exit is reported by waitHealthy or expected by stop
		close(exitC)
	}()
	s.cmd, s.exitC = cmd, exitC
	if err := s.waitHealthy(exitC); err != nil {
		s.signalLocked(syscall.SIGKILL)
		return err // the cleanup prints the log
	}
	return nil
}

// waitHealthy polls etcd's /health until it reports healthy, the process
// exits, or startTimeout passes.
func (s *Server) waitHealthy(exitC <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if healthy(ctx, hc, s.client+"/health") {
			return nil
		}
		select {
		case <-exitC:
			return fmt.Errorf("etcd exited during start (pid %d)", s.cmd.Process.Pid)
		case <-ctx.Done():
			return fmt.Errorf("etcd did not answer within %v (pid %d)", startTimeout, s.cmd.Process.Pid)
		case <-tick.C:
		}
	}
}

func healthy(ctx context.Context, hc *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	return resp.StatusCode == http.StatusOK && bytes.Contains(body.Bytes(), []byte(`"health":"true"`))
}

func (s *Server) stop(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked(sig)
}

// signalLocked sends sig to this server's own process (never by name),
// escalates to SIGKILL after stopTimeout, and waits for the exit.
func (s *Server) signalLocked(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig) // fails only if it already exited
	select {
	case <-s.exitC:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exitC
	}
	s.cmd, s.exitC = nil, nil
}

// logTail returns the last lines of the server's log.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no etcd log: " + err.Error() + ")"
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "(empty)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.Join(lines, "\n")
}

// findBinary looks for etcd on PATH, then where Debian's etcd-server puts it.
func findBinary() (string, error) {
	bin, err := exec.LookPath("etcd")
	if err == nil {
		return bin, nil
	}
	const debian = "/usr/bin/etcd"
	if _, statErr := os.Stat(debian); statErr == nil {
		return debian, nil
	}
	return "", err
}

var noFsync struct {
	once sync.Once
	ok   bool
}

// supportsNoFsync reports whether bin knows --unsafe-no-fsync (etcd 3.5 and
// later; Debian bookworm ships 3.4, which would refuse to start with it).
func supportsNoFsync(bin string) bool {
	noFsync.once.Do(func() {
		out, _ := exec.Command(bin, "--help").CombinedOutput()
		noFsync.ok = bytes.Contains(out, []byte("--unsafe-no-fsync"))
	})
	return noFsync.ok
}

// freePort returns a loopback port that was free a moment ago and that
// this process has not handed out before.
func freePort(tb testing.TB) int {
	tb.Helper()
	port, err := freeport.Get()
	if err != nil {
		tb.Fatalf("etcdtest: find a free port: %v", err)
	}
	return port
}
