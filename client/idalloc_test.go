//go:build unix

package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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

	"github.com/idalloc/idalloc/internal/buildtest"
	"github.com/idalloc/idalloc/internal/freeport"
)

func TestMain(m *testing.M) {
	code := m.Run()
	reportRatio()
	stopShared()
	buildtest.Cleanup()
	os.Exit(code)
}

// server is one idalloc process on a fixed loopback port, restartable on
// the same port so that the client finds it again.
type server struct {
	tb      testing.TB
	name    string
	bin     string
	addr    string
	URL     string
	cfgPath string
	env     []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	logs  []string
	start int
}

// serverConfig is an idalloc config.json: SQLite in a temporary directory
// unless over says otherwise; over is merged one level deep.
func serverConfig(dir string, over map[string]any) map[string]any {
	c := map[string]any{
		"driver":         "sqlite",
		"dsn":            filepath.Join(dir, "idalloc.db"),
		"max_batch":      1000,
		"shutdown_drain": "0s",
		"segment":        map[string]any{"tag_refresh": "1s"},
		"snowflake":      map[string]any{"enabled": false},
	}
	for k, v := range over {
		if sub, ok := v.(map[string]any); ok {
			if base, ok := c[k].(map[string]any); ok {
				merged := maps.Clone(base)
				maps.Copy(merged, sub)
				c[k] = merged
				continue
			}
		}
		c[k] = v
	}
	return c
}

// startServer starts idalloc with cfg (see serverConfig) and waits until it
// serves. It is stopped (SIGKILL) at tb's cleanup; its log is shown if tb
// failed.
func startServer(tb testing.TB, name string, cfg map[string]any, args ...string) *server {
	tb.Helper()
	s := newServer(tb, name, cfg)
	if err := s.run(args...); err != nil {
		tb.Fatal(err)
	}
	return s
}

func newServer(tb testing.TB, name string, cfg map[string]any) *server {
	tb.Helper()
	s, err := prepareServer(tb.TempDir(), name, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s.tb = tb
	tb.Cleanup(s.cleanup)
	return s
}

// prepareServer writes the config of a server in dir, on a port of its own.
func prepareServer(dir, name string, cfg map[string]any) (*server, error) {
	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	s := &server{name: name, addr: "127.0.0.1:" + strconv.Itoa(port), cfgPath: filepath.Join(dir, name+".json")}
	if s.bin, err = buildtest.Idalloc(); err != nil {
		return nil, err
	}
	s.URL = "http://" + s.addr
	cfg["http_addr"] = s.addr
	body, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.cfgPath, body, 0o644); err != nil {
		return nil, err
	}
	// The test's own IDALLOC_* variables would override the config.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDALLOC_") {
			s.env = append(s.env, kv)
		}
	}
	return s, nil
}

// run starts a new incarnation and waits until /health answers 200.
func (s *server) run(args ...string) error {
	s.mu.Lock()
	if s.cmd != nil {
		select {
		case <-s.done:
		default:
			s.mu.Unlock()
			return fmt.Errorf("%s: start while pid %d runs", s.name, s.cmd.Process.Pid)
		}
	}
	s.start++
	logPath := filepath.Join(filepath.Dir(s.cfgPath), fmt.Sprintf("%s-%d.log", s.name, s.start))
	logFile, err := os.Create(logPath)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	cmd := exec.Command(s.bin, append([]string{"-config", s.cfgPath}, args...)...)
	cmd.Dir = filepath.Dir(s.cfgPath)
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		s.mu.Unlock()
		return fmt.Errorf("%s: start idalloc: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	s.logs = append(s.logs, logPath)
	s.mu.Unlock()

	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := hc.Get(s.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("%s: idalloc exited at start:\n%s", s.name, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: /health not 200 within 20s: %v", s.name, err)
		}
	}
}

// signal sends sig to the running incarnation.
func (s *server) signal(sig syscall.Signal) {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Fatalf("%s: %v to pid %d: %v", s.name, sig, s.cmd.Process.Pid, err)
	}
}

// wait waits for the running incarnation to exit and returns its state.
func (s *server) wait(d time.Duration) *os.ProcessState {
	s.tb.Helper()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	select {
	case <-done:
		return cmd.ProcessState
	case <-time.After(d):
		s.tb.Fatalf("%s: still running after %v", s.name, d)
		return nil
	}
}

func (s *server) cleanup() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a frozen process ignores nothing else
		_ = cmd.Process.Kill()
		<-done
	}
	if s.tb != nil && s.tb.Failed() {
		for _, p := range s.logs {
			out, _ := os.ReadFile(p)
			s.tb.Logf("%s log %s:\n%s", s.name, filepath.Base(p), tail(out, 30))
		}
	}
}

// post sends an admin call from loopback, as an operator's curl would.
func (s *server) post(tb testing.TB, path, body string) (int, map[string]any) {
	tb.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		tb.Fatalf("POST %s: %v", path, err)
	}
	return resp.StatusCode, v
}

// createTag creates tag with step.
func (s *server) createTag(tb testing.TB, tag string, step int) {
	tb.Helper()
	status, v := s.post(tb, "/tags", fmt.Sprintf(`{"app_tag":%q,"step":%d}`, tag, step))
	if status != http.StatusCreated {
		tb.Fatalf("create tag %s: HTTP %d %v", tag, status, v)
	}
}

func tail(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
