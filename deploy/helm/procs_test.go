package helmchart_test

// Child processes (idalloc, redis-server, etcd) and their output.

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// proc is a child process and its output.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed once it has exited; err is then its status
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs a process in dir, killed at cleanup if still running.
func start(t *testing.T, dir string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(args[0], args[1:]...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", args[0], err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// startServer starts a lease store's server and waits until its port accepts.
func startServer(t *testing.T, name string, port int, args ...string) {
	t.Helper()
	p := start(t, "", os.Environ(), args...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited: %v\n%s", name, p.err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not accept on port %d:\n%s", name, port, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
