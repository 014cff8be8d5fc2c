// Package redistest runs a private redis-server for tests: its own
// loopback port and directory, and by default no persistence (no save, no
// append-only file), so a restart forgets every key, as a Redis run that
// way does in production. Tests that flush, restart or reconfigure a Redis
// use one of these, never the Redis shared on the machine.
//
//	srv := redistest.Start(t) // skips t when no redis-server is installed
//	st, err := redislease.Open("redis://"+srv.Addr()+"/0", redislease.Options{})
//
// StartCluster makes a three-node Redis Cluster of such servers the same
// way (it needs redis-cli too):
//
//	rc := redistest.StartCluster(t)
//	st, err := redislease.Open(rc.DSN(), redislease.Options{})
//
// It is imported by tests only.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/freeport"
	"github.com/redis/go-redis/v9"
)

// startTimeout bounds the wait for a started redis-server to answer PING.
const startTimeout = 20 * time.Second

// Server is one private redis-server. Restart, Kill and FlushAll are meant
// for one test goroutine at a time.
type Server struct {
	bin     string
	dir     string
	port    int
	logPath string
	args    []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd is reaped
}

// Start starts a redis-server for tb without persistence, with args added
// to its command line (they win over the defaults: "--appendonly", "yes"
// turns persistence on; "--rename-command", "CONFIG", "" plays a managed
// Redis), and kills it at tb's cleanup. It skips tb when no redis-server
// binary is installed.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redistest: no redis-server binary on PATH: skipping the private Redis")
	}
	port, err := freeport.Get()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	s := &Server{bin: bin, dir: dir, port: port, logPath: filepath.Join(dir, "redis.log"), args: args}
	tb.Cleanup(func() {
		if tb.Failed() {
			b, _ := os.ReadFile(s.logPath)
			tb.Logf("--- redis-server: last lines of its log:\n%s", tail(b, 20))
		}
		s.Kill()
	})
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start starts redis-server on s's port and waits until it answers PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redis-server pid %d is still running", s.cmd.Process.Pid)
	}
	args := append([]string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", s.logPath, "--daemonize", "no"}, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done

	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd, s.done = nil, nil
			b, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("redis-server exited at start on port %d:\n%s", s.port, tail(b, 20))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server not answering PING on %s after %v: %v", s.Addr(), startTimeout, err)
		}
	}
}

// Kill kills the server by its PID with SIGKILL and reaps it; killing a
// stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill() // fails only if it has exited already
	<-s.done
	s.cmd, s.done = nil, nil
}

// Restart kills the server and starts it again on the same port: without
// persistence it comes back empty.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		tb.Fatalf("restart redis-server: %v", err)
	}
}

// FlushAll runs FLUSHALL on the server.
func (s *Server) FlushAll(tb testing.TB) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.FlushAll(ctx).Err(); err != nil {
		tb.Fatalf("FLUSHALL on %s: %v", s.Addr(), err)
	}
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
