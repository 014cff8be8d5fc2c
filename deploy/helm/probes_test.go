package helmchart_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
)

const (
	mysqlDSNEnv    = "IDALLOC_TEST_MYSQL_DSN"
	postgresDSNEnv = "IDALLOC_TEST_POSTGRES_DSN"
	// startWithin bounds an instance's start, on a machine busy with
	// other tests; the startup probe allows a minute by default.
	startWithin = 60 * time.Second
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// repoRoot is the root module's directory, above this one.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/idalloc/idalloc\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no directory above this one holds idalloc's go.mod")
		}
		dir = parent
	}
}

var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// idallocBinary builds the repository's binary once per test process,
// without -race: the process under test is the binary users run.
func idallocBinary(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "idalloc-helmchart-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "idalloc")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		began := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", binary.path, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build in %s: %v\n%s", root, err, out)
			return
		}
		t.Logf("built idalloc in %v", time.Since(began).Round(time.Millisecond))
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// TestProbesAnswer runs, for every values case, the repository's binary as
// the rendered pod would run: the container's command with the ConfigMap's
// config file, the Deployment's environment with the Secret's values, each
// listen address moved to a free loopback port. It asks every probe the
// way the kubelet would (an HTTP probe's port name → the container port →
// the config address listening there; gRPC through grpc.health.v1), wants
// 200 or SERVING within the startup probe's allowance, then sends SIGTERM
// and wants readiness to fail at once (the drain) and the process to exit
// 0 within the grace period less the preStop sleep.
//
// The store: MySQL and PostgreSQL values run on a private database (or
// schema) of IDALLOC_TEST_MYSQL_DSN / IDALLOC_TEST_POSTGRES_DSN when set,
// and otherwise on SQLite in a temporary directory (logged). Redis and
// etcd lease stores run on a private redis-server or etcd when installed,
// and otherwise on the main store (logged).
func TestProbesAnswer(t *testing.T) {
	bin := idallocBinary(t)
	for _, c := range valuesCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runPod(t, bin, renderCase(t, readValues(t, c.file)))
		})
	}
}

func runPod(t *testing.T, bin string, r *rendered) {
	d, c := container(t, r)
	text, cfg := configFile(t, r)
	tmp := t.TempDir()
	configPath := filepath.Join(tmp, "config.json")
	if err := os.WriteFile(configPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := podEnv(t, r)
	args := append(append([]string{}, c.Command...), c.Args...)
	storeEnv(t, r, cfg, env, tmp, slices.Contains(args, "-init-schema"))
	leaseEnv(t, cfg, env, tmp)

	if len(args) == 0 || args[0] != "/usr/local/bin/idalloc" {
		t.Fatalf("the container runs %q, want the image's /usr/local/bin/idalloc", args)
	}
	args[0] = bin
	for i := range args {
		if args[i] == "-config" {
			args[i+1] = configPath
		}
	}

	p, local := startPod(t, args, env, cfg, tmp)
	startup := c.StartupProbe
	allowance := time.Duration(startup.PeriodSeconds*startup.FailureThreshold) * time.Second
	began := time.Now()
	if err := waitProbe(t, p, startup, c, cfg, local, startWithin); err != nil {
		t.Fatalf("startup probe: %v\n%s", err, p.out.String())
	}
	if took := time.Since(began); took > allowance {
		t.Errorf("the startup probe passed after %v, past its allowance of %v", took, allowance)
	}
	for name, probe := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "startup": startup, "liveness": c.LivenessProbe} {
		if probe == nil {
			continue
		}
		if err := ask(probe, c, cfg, local); err != nil {
			t.Errorf("%s probe: %v", name, err)
		}
	}

	// The stop: readiness fails at once (/health 503 draining), the
	// process exits 0 within what the grace period leaves after preStop.
	grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds)*time.Second - preStopSleep(t, c)
	stopped := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for ask(c.ReadinessProbe, c, cfg, local) == nil {
		if time.Now().After(deadline) {
			t.Errorf("readiness still passes 3 s after SIGTERM: the pod would keep receiving traffic while it drains")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("idalloc exited with %v after SIGTERM:\n%s", p.err, p.out.String())
		}
		t.Logf("stopped in %v of the %v the grace period leaves after preStop", time.Since(stopped).Round(time.Millisecond), grace)
	case <-time.After(grace):
		t.Errorf("idalloc still running %v after SIGTERM, when the kubelet would kill it:\n%s", grace, p.out.String())
	}
}

// startPod starts idalloc with env over this process's environment (less
// any IDALLOC_* of its own) and every address of the config on a free
// loopback port, and returns the addresses by config key. A port taken by
// another process before idalloc listens makes it exit saying so: then it
// starts again on new ports.
func startPod(t *testing.T, args []string, env map[string]string, cfg idallocConfig, tmp string) (*proc, map[string]string) {
	t.Helper()
	base := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDALLOC_") {
			base = append(base, kv)
		}
	}
	for attempt := 1; ; attempt++ {
		local := map[string]string{}
		full := append([]string{}, base...)
		for k, v := range env {
			full = append(full, k+"="+v)
		}
		for _, lk := range listenKeys {
			if cfg.addr(lk.key) == "" {
				continue
			}
			local[lk.key] = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
			full = append(full, "IDALLOC_"+strings.ToUpper(lk.key)+"="+local[lk.key])
		}
		p := start(t, tmp, full, args...)
		deadline := time.Now().Add(startWithin)
		for {
			conn, err := net.DialTimeout("tcp", local["http_addr"], time.Second)
			if err == nil {
				conn.Close()
				return p, local
			}
			select {
			case <-p.done:
				if attempt < 5 && strings.Contains(p.out.String(), "address already in use") {
					t.Logf("a port was taken before idalloc could listen; starting again on new ports")
				} else {
					t.Fatalf("idalloc exited (%v) before listening:\n%s", p.err, p.out.String())
				}
			default:
				if time.Now().After(deadline) {
					t.Fatalf("idalloc not listening on %s after %v:\n%s", local["http_addr"], startWithin, p.out.String())
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			break
		}
	}
}

// waitProbe asks a probe until it passes, the process exits or within passes.
func waitProbe(t *testing.T, p *proc, probe *corev1.Probe, c *corev1.Container, cfg idallocConfig, local map[string]string, within time.Duration) error {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := ask(probe, c, cfg, local)
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("idalloc exited (%v); the probe last said: %v", p.err, err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not passing after %v: %v", within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ask asks a probe once, as the kubelet does: a port (by name or number)
// is a container port, and the container port is the config address that
// listens on it (which the test moved to loopback).
func ask(probe *corev1.Probe, c *corev1.Container, cfg idallocConfig, local map[string]string) error {
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	target := func(p int32) (string, error) {
		for _, lk := range listenKeys {
			if a := cfg.addr(lk.key); a != "" {
				if n, err := addrPort(a); err == nil && n == p {
					return local[lk.key], nil
				}
			}
		}
		return "", fmt.Errorf("no config address listens on container port %d", p)
	}
	switch {
	case probe.HTTPGet != nil:
		g := probe.HTTPGet
		if g.Host != "" || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) {
			return fmt.Errorf("httpGet host %q scheme %q: idalloc serves plain HTTP on the pod's address", g.Host, g.Scheme)
		}
		port, err := containerPort(c, g.Port)
		if err != nil {
			return err
		}
		addr, err := target(port)
		if err != nil {
			return err
		}
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+g.Path, nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := (&http.Client{Timeout: timeout}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s on port %d: %s", g.Path, port, resp.Status)
		}
		return nil
	case probe.GRPC != nil:
		addr, err := target(probe.GRPC.Port)
		if err != nil {
			return err
		}
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req := &healthpb.HealthCheckRequest{}
		if probe.GRPC.Service != nil {
			req.Service = *probe.GRPC.Service
		}
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, req)
		if err != nil {
			return fmt.Errorf("grpc.health.v1 Check on port %d: %w", probe.GRPC.Port, err)
		}
		if resp.Status != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("grpc.health.v1 on port %d: %s", probe.GRPC.Port, resp.Status)
		}
		return nil
	case probe.TCPSocket != nil:
		port, err := containerPort(c, probe.TCPSocket.Port)
		if err != nil {
			return err
		}
		addr, err := target(port)
		if err != nil {
			return err
		}
		conn, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return errors.New("a probe this test cannot ask (exec: the image's shell is not here)")
}
