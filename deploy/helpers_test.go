// Package deploy_test checks the deployment files with the real tools that
// consume them: promtool, prometheus, nginx, docker-compose and the Go
// toolchain. Each check skips with a one-line reason when its tool is
// missing; CI installs them with
//
//	apt-get install -y prometheus nginx libnginx-mod-stream docker-compose
//
// There is no Docker engine in CI, so the image itself is never built: the
// Dockerfile's build line is run as it stands, and the binary it makes is
// the one started, scraped, put behind nginx and drained below. Everything
// listens on 127.0.0.1 ports picked by the kernel, lives under t.TempDir()
// and is stopped, by PID, when the test ends.
//
// The files: tools_test.go checks the configs with the tools that load them,
// files_test.go what none of the tools checks in them,
// dockerfile_test.go checks the Dockerfile and builds with its build line,
// release_test.go runs scripts/release.sh for this platform,
// service_test.go runs that binary behind Prometheus and nginx (started by
// stack_test.go), and this file holds what they share.
package deploy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// installHint names the Debian package of each tool, for skip messages.
var installHint = map[string]string{
	"promtool":       "prometheus",
	"prometheus":     "prometheus",
	"nginx":          "nginx",
	"docker-compose": "docker-compose",
}

// tool returns the path of a command, or skips the test when it is missing.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (apt-get install -y %s)", name, installHint[name])
	}
	return p
}

// repoRoot is the module root: go test runs in deploy/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root := absPath(t, "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repo root %s has no go.mod: %v", root, err)
	}
	return root
}

// run executes a command, bounded by timeout, and returns its combined
// output; a non-zero exit fails the test with that output.
func run(t *testing.T, timeout time.Duration, dir string, env []string, stdin io.Reader, name string, args ...string) string {
	t.Helper()
	out, err := runErr(timeout, dir, env, stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(timeout time.Duration, dir string, env []string, stdin io.Reader, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func withoutEnv(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// readFile returns a file's contents; failing to read it fails the test.
func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFile creates or replaces a file (mode 0644); an error fails the test.
func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// subdir creates the directory parent/name and returns its path.
func subdir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func absPath(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// replaceOnce replaces old, which must occur exactly once: a rewrite that
// silently matched nothing would leave the test checking something else.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("expected %q exactly once in the file, found it %d times", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

func uniq(s []string) []string { return slices.Compact(sortedCopy(s)) }

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// freeAddr returns a 127.0.0.1 address with a port the kernel picked.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

var client = &http.Client{Timeout: 5 * time.Second}

// proc is a process this test started; it is only ever signalled by PID.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // Wait's result, once done is closed
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// startServing starts a process that listens on ports free a moment
// before (start picks them anew on each call) and waits until ready says
// it serves. When the process exits first saying a port was taken in
// between (tests of other packages dial and listen all the time), it
// starts again, up to 5 times; any other exit, or within passing, fails t
// with the end of its log.
func startServing(t *testing.T, name string, within time.Duration, start func() (p *proc, ready func() bool)) *proc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, ready := start()
		deadline := time.Now().Add(within)
		for !ready() {
			if p.exited() {
				if attempt < 5 && strings.Contains(strings.ToLower(p.logTail()), "address already in use") {
					t.Logf("%s: a port was taken before it could listen; starting again on new ports", name)
					break
				}
				t.Fatalf("%s exited (%v) before it served:\n%s", name, p.err, p.logTail())
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not serving after %s:\n%s", name, within, p.logTail())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !p.exited() {
			return p
		}
	}
}

// procGroup stops its processes together, so their shutdowns (idalloc
// drains for shutdown_drain) overlap instead of adding up.
type procGroup struct {
	mu    sync.Mutex
	procs []*proc
}

func (g *procGroup) start(t *testing.T, name, dir string, env []string, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return p
}

// stopAll sends SIGTERM to every process still running and waits; one that
// has not exited after 15s is killed.
func (g *procGroup) stopAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		if !p.exited() {
			_ = p.signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(15 * time.Second)
	for _, p := range g.procs {
		select {
		case <-p.done:
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// promTokenFile is where prometheus.yml reads the admin token from, and
// where compose's prometheus service writes it at start.
const promTokenFile = "/run/idalloc/admin_token"

// scrapeAuthorization is prometheus.yml's authorization block (the idalloc
// job's) as it stands, but reading adminToken from a file under dir:
// promTokenFile exists only in the container.
func scrapeAuthorization(t *testing.T, dir string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^    authorization:\n(?:      .*\n)+`).FindAllString(readFile(t, "prometheus.yml"), -1)
	if len(m) != 1 {
		t.Fatalf("prometheus.yml: want one authorization block (the idalloc job's), found %d", len(m))
	}
	token := filepath.Join(dir, "admin_token")
	writeFile(t, token, adminToken)
	return replaceOnce(t, m[0], promTokenFile, token)
}

// prometheusConfigCopy writes prometheus.yml into dir, beside a copy of
// alerts.yml, reading the admin token from a file there: promtool check
// config refuses a credentials_file that does not exist, and
// promTokenFile exists only in the container.
func prometheusConfigCopy(t *testing.T, dir string) string {
	t.Helper()
	token := filepath.Join(dir, "admin_token")
	writeFile(t, token, adminToken)
	writeFile(t, filepath.Join(dir, "alerts.yml"), readFile(t, "alerts.yml"))
	conf := filepath.Join(dir, "prometheus.yml")
	writeFile(t, conf, replaceOnce(t, readFile(t, "prometheus.yml"), promTokenFile, token))
	return conf
}
