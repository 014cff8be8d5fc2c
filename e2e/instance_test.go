package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/freeport"
)

// instance is one idalloc server on a fixed 127.0.0.1 port, restarted on the
// same port so keep-alive clients find it again. Each start is a new
// incarnation; gen counts the incarnations that ended (it is incremented
// after a process is reaped and before the next starts), so a reply obtained
// while gen read the same before and after came from incarnation gen.
type instance struct {
	t       *testing.T
	env     *suiteEnv
	name    string
	addr    string // 127.0.0.1:port
	url     string // http://addr
	cfgPath string
	driver  string // the store driver: "mysql" unless a test sets it before the first start
	dsn     string
	ctl     *client // for control calls (health, tags, workerid)

	gen atomic.Int64

	mu   sync.Mutex
	proc *process
	logs []string
}

// process is one incarnation.
type process struct {
	cmd   *exec.Cmd
	done  chan struct{} // closed once reaped
	state *os.ProcessState
	log   string
	// counted: gen was incremented for this incarnation; guarded by
	// instance.mu.
	counted bool
}

// config returns an idalloc config.json body: driver, dsn and address come
// from the environment; over is merged over these defaults one level deep.
func config(over map[string]any) map[string]any {
	c := map[string]any{
		"max_batch":      1000,
		"shutdown_drain": "0s",
		"segment":        map[string]any{"max_step": 1000000, "tag_refresh": "10s"},
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

// startInstance writes cfg, starts idalloc on dsn's database and waits until
// /health answers 200 (newInstance prepares it). initSchema applies schema.sql first (the first
// instance of a database). Every incarnation is killed at t's cleanup, and
// the ends of its logs are shown when t failed.
func startInstance(t *testing.T, env *suiteEnv, name, dsn string, cfg map[string]any, initSchema bool) *instance {
	t.Helper()
	inst := newInstance(t, env, name, dsn, cfg)
	if err := inst.start(initSchema); err != nil {
		t.Fatal(err)
	}
	return inst
}

// newInstance prepares an idalloc instance on dsn with config cfg without
// starting it, on a port of its own. Every incarnation is killed at t's
// cleanup and the ends of its logs are shown when t failed.
func newInstance(t *testing.T, env *suiteEnv, name, dsn string, cfg map[string]any) *instance {
	t.Helper()
	dir := t.TempDir()
	in := &instance{
		t: t, env: env, name: name, driver: "mysql", dsn: dsn,
		addr:    loopbackAddr(t),
		cfgPath: filepath.Join(dir, name+".json"),
	}
	in.url = "http://" + in.addr
	in.ctl = newClient(in.url, 5*time.Second)
	body, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in.cfgPath, body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.cleanup)
	return in
}

// loopbackAddr is an address on 127.0.0.1 for a listener of an instance
// (freeport: one this process has not handed out before).
func loopbackAddr(t *testing.T) string {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// start starts a new incarnation and waits until it serves (/health 200),
// retrying a few times when the port was briefly taken.
func (in *instance) start(initSchema bool) error {
	var err error
	for attempt := range 5 {
		if err = in.startOnce(initSchema, attempt); err == nil || !errors.Is(err, errAddrInUse) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

var errAddrInUse = errors.New("address already in use")

func (in *instance) startOnce(initSchema bool, attempt int) error {
	p, err := in.spawn(initSchema, attempt)
	if err != nil {
		return err
	}
	logPath := p.log
	deadline := time.Now().Add(20 * time.Second)
	probe := newClient(in.url, time.Second)
	defer probe.close()
	for {
		r, err := probe.get("/health")
		if err == nil && r.HTTPStatus == http.StatusOK {
			return nil
		}
		select {
		case <-p.done:
			out, _ := os.ReadFile(logPath)
			if strings.Contains(string(out), "address already in use") {
				return fmt.Errorf("%s: %w", in.name, errAddrInUse)
			}
			return fmt.Errorf("%s: idalloc exited at start (%v):\n%s", in.name, p.state, tail(out, 20))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: /health not 200 within 20s (last: %+v, %v)", in.name, r, err)
		}
	}
}

// spawn starts a new incarnation and returns at once, without waiting
// for it to serve; attempt numbers its log among retries of one start.
func (in *instance) spawn(initSchema bool, attempt int) (*process, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc != nil {
		select {
		case <-in.proc.done:
		default:
			return nil, fmt.Errorf("%s: start while pid %d runs", in.name, in.proc.cmd.Process.Pid)
		}
	}
	logPath := filepath.Join(filepath.Dir(in.cfgPath), fmt.Sprintf("%s-%d-%d.log", in.name, len(in.logs), attempt))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := in.command(initSchema)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: start idalloc: %w", in.name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		logFile.Close()
		close(p.done)
	}()
	in.proc = p
	in.logs = append(in.logs, logPath)
	return p, nil
}

// command is the idalloc command line of an incarnation: in's config file,
// address, driver and DSN, no admin token.
func (in *instance) command(initSchema bool) *exec.Cmd {
	args := []string{"-config", in.cfgPath}
	if initSchema {
		args = append(args, "-init-schema")
	}
	cmd := exec.Command(in.env.bin, args...)
	cmd.Dir = filepath.Dir(in.cfgPath)
	cmd.Env = append(os.Environ(),
		"IDALLOC_HTTP_ADDR="+in.addr,
		"IDALLOC_DRIVER="+in.driver,
		"IDALLOC_DSN="+in.dsn,
		"IDALLOC_ADMIN_TOKEN=",
	)
	cmd.SysProcAttr = childAttr()
	return cmd
}

func (in *instance) current() *process {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.proc
}

// pid of the current incarnation.
func (in *instance) pid() int { return in.current().cmd.Process.Pid }

// signal sends sig to the current incarnation, by PID.
func (in *instance) signal(sig syscall.Signal) error {
	p := in.current()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: signal %v to pid %d: %w", in.name, sig, p.cmd.Process.Pid, err)
	}
	return nil
}

// wait waits up to timeout for the current incarnation to exit; once it has,
// gen is incremented and its state returned.
func (in *instance) wait(timeout time.Duration) (*os.ProcessState, error) {
	p := in.current()
	select {
	case <-p.done:
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: pid %d still running after %v", in.name, p.cmd.Process.Pid, timeout)
	}
	in.mu.Lock()
	if !p.counted {
		p.counted = true
		in.gen.Add(1)
	}
	in.mu.Unlock()
	return p.state, nil
}

// kill9 kills the current incarnation with SIGKILL and reaps it.
func (in *instance) kill9() error {
	if err := in.signal(syscall.SIGKILL); err != nil {
		return err
	}
	_, err := in.wait(10 * time.Second)
	return err
}

// stopGracefully sends SIGTERM and waits for the exit; it fails unless the
// exit status is 0.
func (in *instance) stopGracefully(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := in.signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	st, err := in.wait(timeout)
	took := time.Since(start)
	if err != nil {
		return took, err
	}
	if st.ExitCode() != 0 {
		return took, fmt.Errorf("%s: exit after SIGTERM: %v, want status 0", in.name, st)
	}
	return took, nil
}

// cleanup kills a running incarnation (resuming it first, in case it is
// stopped) and, when the test failed, logs the end of every incarnation's log.
func (in *instance) cleanup() {
	if p := in.current(); p != nil {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				in.t.Errorf("%s: pid %d not reaped 10s after SIGKILL", in.name, p.cmd.Process.Pid)
			}
		}
	}
	in.ctl.close()
	if !in.t.Failed() {
		return
	}
	in.mu.Lock()
	logs := append([]string(nil), in.logs...)
	in.mu.Unlock()
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		in.t.Logf("--- %s: last lines of %s:\n%s", in.name, filepath.Base(l), tail(b, 40))
	}
}

// createTag creates tag with step through POST /tags (loopback, no token).
func (in *instance) createTag(t *testing.T, tag string, step int64) {
	t.Helper()
	in.postTag(t, fmt.Sprintf(`{"app_tag":%q,"step":%d}`, tag, step))
}

// postTag creates the tag body describes through POST /tags.
func (in *instance) postTag(t *testing.T, body string) {
	t.Helper()
	r, err := in.ctl.post("/tags", body)
	if err != nil {
		t.Fatalf("%s: POST /tags: %v", in.name, err)
	}
	if r.HTTPStatus != http.StatusCreated || r.RespCode != 0 {
		t.Fatalf("%s: POST /tags %s: HTTP %d %+v, want 201 resp_code 0", in.name, body, r.HTTPStatus, r)
	}
}
