package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server of one test: its own loopback port and
// directory, and no persistence (no save, no append-only file), so that a
// restart forgets every key, as a Redis run that way does in production.
// The Redis shared on this machine is never flushed or restarted by a test.
type redisServer struct {
	bin     string
	dir     string
	port    int
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd is reaped
}

// startRedis starts a private redis-server for t and kills it at t's
// cleanup; it skips t when no redis-server binary is installed.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin := findBinary("redis-server", "/usr/bin/redis-server", "/usr/local/bin/redis-server")
	if bin == "" {
		t.Skip("e2e: no redis-server binary (PATH, /usr/bin, /usr/local/bin): skipping the private Redis")
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &redisServer{bin: bin, dir: dir, port: port, logPath: filepath.Join(dir, "redis.log")}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(r.logPath)
			t.Logf("--- redis-server: last lines of its log:\n%s", tail(b, 20))
		}
		r.kill()
	})
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// addr is the server's host:port.
func (r *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// start starts redis-server on r's port and waits until it answers PING.
func (r *redisServer) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return fmt.Errorf("redis-server pid %d is still running", r.cmd.Process.Pid)
	}
	cmd := exec.Command(r.bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--save", "", "--appendonly", "no",
		"--dir", r.dir, "--logfile", r.logPath, "--daemonize", "no")
	cmd.Dir = r.dir
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	r.cmd, r.done = cmd, done

	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			r.cmd, r.done = nil, nil
			b, _ := os.ReadFile(r.logPath)
			return fmt.Errorf("redis-server exited at start on port %d:\n%s", r.port, tail(b, 20))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server not answering PING on %s after 20s: %v", r.addr(), err)
		}
	}
}

// kill kills the server by its PID with SIGKILL and reaps it; killing a
// stopped server does nothing.
func (r *redisServer) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill() // fails only if it has exited already
	<-r.done
	r.cmd, r.done = nil, nil
}

// restart kills the server and starts it again on the same port: without
// persistence it comes back empty.
func (r *redisServer) restart(t *testing.T) {
	t.Helper()
	r.kill()
	if err := r.start(); err != nil {
		t.Fatalf("restart redis-server: %v", err)
	}
}

// flushAll runs FLUSHALL on the server.
func (r *redisServer) flushAll(t *testing.T) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL on %s: %v", r.addr(), err)
	}
}
