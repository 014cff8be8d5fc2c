// Package deploy_test checks the deployment files with the real tools that
// consume them: promtool, prometheus, nginx, docker-compose and the Go
// toolchain. Each check skips with a one-line reason when its tool is
// missing; CI installs them with
//
//	apt-get install -y prometheus nginx docker-compose
//
// There is no Docker engine in CI, so the image itself is never built: the
// Dockerfile's build line is run as it stands, and the binary it makes is
// the one started, scraped, put behind nginx and drained below. Everything
// listens on 127.0.0.1 ports picked by the kernel, lives under t.TempDir()
// and is stopped, by PID, when the test ends.
package deploy_test

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
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

func TestPrometheusRules(t *testing.T) {
	promtool := tool(t, "promtool")
	// Run from deploy/ so rule_files resolve next to the config, as they do
	// in /etc/prometheus/ in the container.
	t.Run("check config", func(t *testing.T) {
		t.Log(run(t, 30*time.Second, ".", nil, nil, promtool, "check", "config", "prometheus.yml"))
	})
	t.Run("check rules", func(t *testing.T) {
		t.Log(run(t, 30*time.Second, ".", nil, nil, promtool, "check", "rules", "alerts.yml"))
	})
	t.Run("unit tests of the alerts", func(t *testing.T) {
		t.Log(run(t, 30*time.Second, ".", nil, nil, promtool, "test", "rules", "alerts.test.yml"))
	})
}

func TestNginxConfig(t *testing.T) {
	nginx := tool(t, "nginx")
	conf, err := filepath.Abs("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// nginx resolves upstream hosts when it loads the file. Preferably the
	// file is checked unchanged, with idalloc1/idalloc2 resolving through a
	// private /etc/hosts in a mount namespace of its own (root only);
	// otherwise a copy with those names replaced by 127.0.0.1 is checked.
	hosts := filepath.Join(tmp, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost idalloc1 idalloc2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := []string{"-t", "-c", conf, "-e", filepath.Join(tmp, "error.log"), "-g", "pid " + filepath.Join(tmp, "nginx.pid") + ";"}
	if unshare, ok := privateHosts(hosts); ok {
		t.Logf("checking %s unchanged, upstream hosts from a private /etc/hosts", conf)
		script := `mount --bind "$0" /etc/hosts && exec "$@"`
		t.Log(run(t, 30*time.Second, tmp, nil, nil, unshare,
			append([]string{"--mount", "--propagation", "private", "sh", "-c", script, hosts, nginx}, check...)...))
		return
	}
	src, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	s = replaceOnce(t, s, "server idalloc1:8880", "server 127.0.0.1:8880")
	s = replaceOnce(t, s, "server idalloc2:8880", "server 127.0.0.1:8880")
	s = replaceOnce(t, s, "http {", "http {\n"+tempPaths(tmp))
	copyPath := filepath.Join(tmp, "nginx.conf")
	if err := os.WriteFile(copyPath, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("no private mount namespace here: checking a copy with idalloc1/idalloc2 replaced by 127.0.0.1")
	check[2] = copyPath
	t.Log(run(t, 30*time.Second, tmp, nil, nil, nginx, check...))
}

// privateHosts reports whether this process may bind-mount a file over
// /etc/hosts in a private mount namespace, and the unshare to do it with.
func privateHosts(hosts string) (string, bool) {
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		return "", false
	}
	_, err = runErr(10*time.Second, "", nil, nil, unshare, "--mount", "--propagation", "private",
		"sh", "-c", `mount --bind "$0" /etc/hosts && grep -q idalloc1 /etc/hosts`, hosts)
	return unshare, err == nil
}

// tempPaths moves nginx's temp directories under dir, so that a copy of the
// config runs without root-owned paths.
func tempPaths(dir string) string {
	var b strings.Builder
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "    %s_temp_path %s;\n", d, filepath.Join(dir, d))
	}
	return b.String()
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

func TestComposeConfig(t *testing.T) {
	compose := tool(t, "docker-compose")
	env := withoutEnv(os.Environ(), "MYSQL_PASSWORD", "MYSQL_ROOT_PASSWORD", "IDALLOC_ADMIN_TOKEN", "GRAFANA_ADMIN_PASSWORD")
	// Project directory = deploy/, so a developer's deploy/.env would leak
	// into the check; point compose at an empty one instead.
	emptyEnv := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(emptyEnv, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--env-file", emptyEnv, "-f", "docker-compose.yml", "config"}

	t.Run("placeholders", func(t *testing.T) {
		run(t, 60*time.Second, ".", env, nil, compose, append(args, "-q")...)
	})
	t.Run("secrets come from the environment", func(t *testing.T) {
		secrets := []string{
			"MYSQL_PASSWORD=pw-from-env-1",
			"MYSQL_ROOT_PASSWORD=pw-from-env-2",
			"IDALLOC_ADMIN_TOKEN=pw-from-env-3",
			"GRAFANA_ADMIN_PASSWORD=pw-from-env-4",
		}
		out := run(t, 60*time.Second, ".", append(env, secrets...), nil, compose, args...)
		if strings.Contains(out, "change-me") {
			t.Errorf("a placeholder survives with every secret set in the environment:\n%s", out)
		}
		// The database user's password and both instances' DSNs must be
		// one and the same variable.
		if n := strings.Count(out, "pw-from-env-1"); n != 3 {
			t.Errorf("MYSQL_PASSWORD appears %d times, want 3 (mysql, idalloc1 DSN, idalloc2 DSN):\n%s", n, out)
		}
		for _, s := range secrets[1:] {
			v := s[strings.IndexByte(s, '=')+1:]
			if !strings.Contains(out, v) {
				t.Errorf("%s does not reach the rendered config", s)
			}
		}
	})
}

func withoutEnv(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// dockerfileBuildLine is the one RUN line the image builds idalloc with.
var dockerfileBuildLine = regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*)$`)

func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	src, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(src)

	t.Run("builder matches go.mod", func(t *testing.T) {
		mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
		if m == nil {
			t.Fatal("go.mod has no go directive")
		}
		if want := "FROM golang:" + string(m[1]) + " "; !strings.Contains(df, want) {
			t.Errorf("go.mod says go %s; the Dockerfile has no %q stage", m[1], strings.TrimSpace(want))
		}
	})

	t.Run("final stage", func(t *testing.T) {
		final := df[strings.LastIndex(df, "\nFROM "):]
		user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(final)
		if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
			t.Errorf("the final stage must switch to a non-root USER, has %v", user)
		}
		if !regexp.MustCompile(`(?m)^EXPOSE 8880$`).MatchString(final) {
			t.Error("no EXPOSE 8880 in the final stage")
		}
		if !regexp.MustCompile(`(?ms)^HEALTHCHECK .*/health`).MatchString(final) {
			t.Error("no HEALTHCHECK on /health in the final stage")
		}
	})

	t.Run("COPY sources exist in the build context", func(t *testing.T) {
		for _, m := range regexp.MustCompile(`(?m)^COPY (.+)$`).FindAllStringSubmatch(df, -1) {
			f := strings.Fields(m[1])
			if strings.HasPrefix(f[0], "--from=") {
				continue
			}
			for _, p := range f[:len(f)-1] {
				if strings.HasPrefix(p, "--") {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("COPY %s: %v", p, err)
				}
			}
		}
	})

	t.Run("no secret in the baked-in config.json", func(t *testing.T) {
		var c struct {
			AdminToken string `json:"admin_token"`
			DSN        string `json:"dsn"`
		}
		data, err := os.ReadFile(filepath.Join(root, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		if c.AdminToken != "" || strings.Contains(c.DSN, "@") {
			t.Error("config.json, copied into the image, holds an admin_token or a DSN with credentials; pass them as IDALLOC_* variables")
		}
	})

	t.Run("build line makes a static binary", func(t *testing.T) {
		bin := dockerfileBinary(t)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary has a PT_INTERP program header: it is dynamically linked and will not run on a libc-less image")
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("the binary needs shared libraries %v", libs)
		}
	})
}

// dockerfileBinary runs the Dockerfile's build line from the repo root, as
// `COPY . .` + `RUN` do in /src, with only its -o redirected into
// t.TempDir(), and returns the binary: the service tests run exactly what
// the image would. A second call costs a link; the compiles are cached.
func dockerfileBinary(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	src, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	lines := dockerfileBuildLine.FindAllStringSubmatch(string(src), -1)
	if len(lines) != 1 {
		t.Fatalf("want exactly one Dockerfile line starting %q, found %d", "RUN CGO_ENABLED=0 go build", len(lines))
	}
	line := lines[0][1]
	out := regexp.MustCompile(`(\s-o\s+)(\S+)`)
	if len(out.FindAllString(line, -1)) != 1 {
		t.Fatalf("the build line needs exactly one -o <path>: %s", line)
	}
	for _, flag := range []string{"-trimpath", `-ldflags="-s -w"`} {
		if !strings.Contains(line, flag) {
			t.Fatalf("the build line lacks %s: %s", flag, line)
		}
	}
	bin := filepath.Join(t.TempDir(), "idalloc")
	cmd := out.ReplaceAllLiteralString(line, " -o "+shellQuote(bin))
	start := time.Now()
	// /bin/sh -c, as Docker runs a shell-form RUN. With a cold build cache
	// (modernc.org/sqlite is large) this takes a minute or two.
	outp, err := runErr(5*time.Minute, root, os.Environ(), nil, "sh", "-c", cmd)
	switch {
	case err != nil && strings.Contains(outp, "function main is undeclared"):
		t.Skip("no main function at the repo root yet (main.go missing), so there is no idalloc binary to build")
	case err != nil:
		t.Fatalf("%s: %v\n%s", cmd, err, outp)
	}
	t.Logf("built in %s: %s", time.Since(start).Round(time.Millisecond), cmd)
	return bin
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestServiceBehindTheStack starts two instances of the Dockerfile's binary
// with the shipped config.json (each on its own embedded store), then checks
// the scrape with promtool, the alert and dashboard queries against a real
// Prometheus scraping both, and nginx.conf routing and draining in front of
// them.
func TestServiceBehindTheStack(t *testing.T) {
	bin := dockerfileBinary(t)
	root := repoRoot(t)
	tmp := t.TempDir()
	procs := &procGroup{}
	t.Cleanup(procs.stopAll)

	inst := []*instance{
		startInstance(t, procs, bin, root, tmp, "idalloc1"),
		startInstance(t, procs, bin, root, tmp, "idalloc2"),
	}
	for _, in := range inst {
		in.waitHealthy(t, 15*time.Second)
		for range 5 {
			in.mustGet(t, "/alloc?app_tag=test_business")
		}
		for range 3 {
			in.mustGet(t, "/snowflake")
		}
	}
	scrape := inst[0].mustGet(t, "/metrics")

	t.Run("promtool check metrics", func(t *testing.T) {
		promtool := tool(t, "promtool")
		out, err := runErr(30*time.Second, tmp, nil, strings.NewReader(scrape), promtool, "check", "metrics")
		if err != nil {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
	})

	t.Run("every metric the deploy files use is served", func(t *testing.T) {
		served := map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(scrape))
		for sc.Scan() {
			l := sc.Text()
			// A histogram's family name (for prose) is on its TYPE line; its
			// samples are name_bucket, _sum and _count.
			if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
				served[f[2]] = true
			} else if i := strings.IndexAny(l, "{ "); i > 0 && !strings.HasPrefix(l, "#") {
				served[l[:i]] = true
			}
		}
		for _, file := range []string{"alerts.yml", "grafana/dashboards/idalloc.json"} {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range uniq(regexp.MustCompile(`idalloc_[a-z0-9_]*[a-z0-9]`).FindAllString(string(data), -1)) {
				if !served[name] {
					t.Errorf("%s uses %s, which /metrics does not serve", file, name)
				}
			}
		}
	})

	t.Run("prometheus scrapes both and evaluates the alerts and dashboard", func(t *testing.T) {
		promBin := tool(t, "prometheus")
		prom := startPrometheus(t, procs, promBin, tmp, inst)
		for _, in := range inst {
			in.mustGet(t, "/alloc?app_tag=test_business")
		}

		// The counter that every dashboard starts from, for both instances.
		want := []string{inst[0].addr, inst[1].addr}
		var got []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			got = got[:0]
			for _, s := range prom.query(t, `idalloc_ids_issued_total{mode="segment",app_tag="test_business"}`) {
				got = append(got, s.Metric["instance"])
			}
			slices.Sort(got)
			if slices.Equal(got, sortedCopy(want)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 20s Prometheus has idalloc_ids_issued_total for %v, want %v", got, want)
			}
			time.Sleep(250 * time.Millisecond)
		}

		// Evaluation errors (a many-to-many match, say) only show on real
		// series, which promtool's unit tests do not have.
		deadline = time.Now().Add(10 * time.Second)
		for {
			rules := prom.rules(t)
			pending := 0
			for _, r := range rules {
				switch r.Health {
				case "ok":
				case "unknown":
					pending++
				default:
					t.Errorf("alert %s: health %s: %s", r.Name, r.Health, r.LastError)
				}
			}
			if len(rules) == 0 {
				t.Fatal("Prometheus loaded no rules from alerts.yml")
			}
			if pending == 0 {
				t.Logf("%d alert rules evaluated without error", len(rules))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d rules still not evaluated after 10s", pending, len(rules))
			}
			time.Sleep(250 * time.Millisecond)
		}

		// rate() needs two samples in its window.
		deadline = time.Now().Add(10 * time.Second)
		for len(prom.query(t, `rate(idalloc_ids_issued_total[1m])`)) < 2 {
			if time.Now().After(deadline) {
				t.Fatal("after 10s Prometheus still has no rate of idalloc_ids_issued_total for both instances")
			}
			time.Sleep(250 * time.Millisecond)
		}
		for _, p := range dashboardQueries(t) {
			expr := strings.NewReplacer(`$instance`, `.*`, `$__rate_interval`, `1m`).Replace(p.expr)
			n := len(prom.query(t, expr))
			// Healthy instances have no 5xx series; every other panel must
			// find data, or a matcher or label name in it is wrong.
			if n == 0 && !strings.Contains(expr, `code=~"5.."`) {
				t.Errorf("panel %q: no series for %s", p.title, expr)
			}
		}
	})

	t.Run("nginx routes, hides admin routes and rides out a drain", func(t *testing.T) {
		nginxBin := tool(t, "nginx")
		proxy := startNginx(t, procs, nginxBin, tmp, inst)

		for _, path := range []string{"/alloc?app_tag=test_business", "/snowflake", "/health"} {
			status, body := proxy.get(t, path)
			if status != http.StatusOK || !strings.Contains(body, `"resp_code":0`) {
				t.Errorf("GET %s through nginx: %d %s", path, status, body)
			}
		}
		status, body := proxy.get(t, "/snowflake/"+snowflakeID(t, proxy))
		if status != http.StatusOK {
			t.Errorf("GET /snowflake/{id} through nginx: %d %s", status, body)
		}
		for _, rq := range []struct{ method, path string }{
			{"GET", "/metrics"}, {"GET", "/tags"}, {"POST", "/tags"}, {"GET", "/workerid"},
			{"POST", "/workerid"}, {"POST", "/workerid/renew"}, {"POST", "/workerid/release"},
		} {
			status, body := proxy.do(t, rq.method, rq.path, strings.NewReader(`{"app_tag":"x","step":10}`))
			if status != http.StatusNotFound || !strings.Contains(body, `"resp_code":2`) {
				t.Errorf("%s %s through nginx: %d %s; want 404 resp_code 2 (not routed)", rq.method, rq.path, status, body)
			}
		}

		// The README's rolling restart: SIGTERM one instance; through its
		// drain and after it has gone, clients see only successes.
		gone := inst[1]
		if err := gone.proc.signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		sawDraining := false
		ask := func(i int) {
			path := "/alloc?app_tag=test_business"
			if i%2 == 1 {
				path = "/snowflake"
			}
			if status, body := proxy.get(t, path); status != http.StatusOK {
				t.Errorf("GET %s through nginx, %s draining or gone: %d %s", path, gone.name, status, body)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		during := 0
		for ; !gone.proc.exited(); during++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not exit within 20s of SIGTERM", gone.name)
			}
			if st, b, err := gone.get("/health"); err == nil && st == http.StatusServiceUnavailable && strings.Contains(b, `"draining"`) {
				sawDraining = true
			}
			ask(during)
			time.Sleep(50 * time.Millisecond)
		}
		// Gone: nginx meets a refused connection and retries the other one.
		for i := range 20 {
			ask(i)
		}
		t.Logf("%d requests through nginx during the drain and 20 after; %s exited with %v", during, gone.name, gone.proc.err)
		if !sawDraining {
			t.Errorf("%s never answered /health 503 draining after SIGTERM", gone.name)
		}
	})
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

type dashboardQuery struct{ title, expr string }

// dashboardQueries are the PromQL expressions of every panel.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	data, err := os.ReadFile("grafana/dashboards/idalloc.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var qs []dashboardQuery
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, dashboardQuery{p.Title, tg.Expr})
		}
	}
	if len(qs) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return qs
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

type instance struct {
	name, addr string
	proc       *proc
}

// startInstance runs the binary as the image does (-config with the
// shipped config.json, overrides from IDALLOC_*), on an embedded store.
func startInstance(t *testing.T, g *procGroup, bin, root, tmp, name string) *instance {
	t.Helper()
	dir := filepath.Join(tmp, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	env := append(withoutEnv(os.Environ(), "IDALLOC_HTTP_ADDR", "IDALLOC_DRIVER", "IDALLOC_DSN", "IDALLOC_ADMIN_TOKEN"),
		"IDALLOC_HTTP_ADDR="+addr,
		"IDALLOC_DRIVER=sqlite",
		"IDALLOC_DSN="+filepath.Join(dir, "idalloc.db"),
	)
	p := g.start(t, name, dir, env, bin, "-config", filepath.Join(root, "config.json"))
	return &instance{name: name, addr: addr, proc: p}
}

func (in *instance) waitHealthy(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if in.proc.exited() {
			t.Fatalf("%s exited (%v) before answering /health:\n%s", in.name, in.proc.err, in.proc.logTail())
		}
		if st, _, err := in.get("/health"); err == nil && st == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy on %s after %s:\n%s", in.name, in.addr, within, in.proc.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (in *instance) get(path string) (int, string, error) {
	resp, err := client.Get("http://" + in.addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (in *instance) mustGet(t *testing.T, path string) string {
	t.Helper()
	st, body, err := in.get(path)
	if err != nil || st != http.StatusOK {
		t.Fatalf("GET %s on %s: %d %v %s\n%s", path, in.name, st, err, body, in.proc.logTail())
	}
	return body
}

type prometheus struct {
	base string
	proc *proc
}

func startPrometheus(t *testing.T, g *procGroup, bin, tmp string, inst []*instance) *prometheus {
	t.Helper()
	dir := filepath.Join(tmp, "prometheus")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, in := range inst {
		targets = append(targets, fmt.Sprintf("%q", in.addr))
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: idalloc
    static_configs:
      - targets: [%s]
`, rules, strings.Join(targets, ", "))
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := g.start(t, "prometheus", dir, os.Environ(), bin,
		"--config.file="+confPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	prom := &prometheus{base: "http://" + addr, proc: p}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("prometheus exited (%v):\n%s", p.err, p.logTail())
		}
		if resp, err := client.Get(prom.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return prom
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s after 15s:\n%s", addr, p.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type promSeries struct {
	Metric map[string]string `json:"metric"`
}

// query runs an instant query; a query Prometheus cannot parse or evaluate
// fails the test.
func (p *prometheus) query(t *testing.T, expr string) []promSeries {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	p.api(t, "/api/v1/query?query="+url.QueryEscape(expr), &r)
	if r.Status != "success" {
		t.Fatalf("query %s: %s", expr, r.Error)
	}
	return r.Data.Result
}

type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

func (p *prometheus) rules(t *testing.T) []promRule {
	t.Helper()
	var r struct {
		Data struct {
			Groups []struct {
				Rules []promRule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	p.api(t, "/api/v1/rules", &r)
	var all []promRule
	for _, g := range r.Data.Groups {
		all = append(all, g.Rules...)
	}
	return all
}

func (p *prometheus) api(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := client.Get(p.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// 400 and 422 carry a JSON error body worth reporting.
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %d: %v", path, resp.StatusCode, err)
	}
}

type nginxProxy struct {
	base string
	proc *proc
}

// startNginx runs a copy of nginx.conf with the upstreams pointed at the
// test's instances and the listener at a free port; everything else in the
// file is what the container runs.
func startNginx(t *testing.T, g *procGroup, bin, tmp string, inst []*instance) *nginxProxy {
	t.Helper()
	dir := filepath.Join(tmp, "nginx")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	s := string(src)
	s = replaceOnce(t, s, "server idalloc1:8880", "server "+inst[0].addr)
	s = replaceOnce(t, s, "server idalloc2:8880", "server "+inst[1].addr)
	s = replaceOnce(t, s, "listen 8880;", "listen "+addr+";")
	s = replaceOnce(t, s, "http {", "http {\n"+tempPaths(dir))
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	// One foreground process, no workers: SIGTERM to its PID stops it all.
	p := g.start(t, "nginx", dir, os.Environ(), bin, "-c", conf, "-e", filepath.Join(dir, "error.log"),
		"-g", "daemon off; master_process off; pid "+filepath.Join(dir, "nginx.pid")+";")
	px := &nginxProxy{base: "http://" + addr, proc: p}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("nginx exited (%v):\n%s", p.err, p.logTail())
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return px
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx not listening on %s after 10s:\n%s", addr, p.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (px *nginxProxy) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return px.do(t, http.MethodGet, path, nil)
}

func (px *nginxProxy) do(t *testing.T, method, path string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, px.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s through nginx: %v\n%s", method, path, err, px.proc.logTail())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// snowflakeID fetches one snowflake ID through nginx, as a decimal string.
func snowflakeID(t *testing.T, px *nginxProxy) string {
	t.Helper()
	status, body := px.get(t, "/snowflake")
	var r struct {
		IDStr string `json:"id_str"`
	}
	if err := json.Unmarshal([]byte(body), &r); status != http.StatusOK || err != nil || r.IDStr == "" {
		t.Fatalf("GET /snowflake through nginx: %d %s", status, body)
	}
	return r.IDStr
}
