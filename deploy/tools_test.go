package deploy_test

// Static checks of the config files, each by the tool that loads it:
// promtool for prometheus.yml, alerts.yml and their unit tests, nginx -t for
// nginx.conf and docker-compose config for docker-compose.yml.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrometheusRules(t *testing.T) {
	promtool := tool(t, "promtool")
	// Run from deploy/ so rule_files resolve next to the config, as they do
	// in /etc/prometheus/ in the container.
	for _, c := range []struct {
		name string
		args []string
	}{
		{"check config", []string{"check", "config", "prometheus.yml"}},
		{"check rules", []string{"check", "rules", "alerts.yml"}},
		{"unit tests of the alerts", []string{"test", "rules", "alerts.test.yml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Log(run(t, 30*time.Second, ".", nil, nil, promtool, c.args...))
		})
	}
}

func TestNginxConfig(t *testing.T) {
	nginx := tool(t, "nginx")
	conf := absPath(t, "nginx.conf")
	tmp := t.TempDir()
	// nginx resolves upstream hosts when it loads the file. Preferably the
	// file is checked unchanged, with idalloc1/idalloc2 resolving through a
	// private /etc/hosts in a mount namespace of its own (root only);
	// otherwise a copy with those names replaced by 127.0.0.1 is checked.
	hosts := filepath.Join(tmp, "hosts")
	writeFile(t, hosts, "127.0.0.1 localhost idalloc1 idalloc2\n")
	check := []string{"-t", "-c", conf, "-e", filepath.Join(tmp, "error.log"), "-g", "pid " + filepath.Join(tmp, "nginx.pid") + ";"}
	if unshare, ok := privateHosts(hosts); ok {
		t.Logf("checking %s unchanged, upstream hosts from a private /etc/hosts", conf)
		script := `mount --bind "$0" /etc/hosts && exec "$@"`
		t.Log(run(t, 30*time.Second, tmp, nil, nil, unshare,
			append([]string{"--mount", "--propagation", "private", "sh", "-c", script, hosts, nginx}, check...)...))
		return
	}
	copyPath := nginxConfCopy(t, conf, tmp, "127.0.0.1:8880", "127.0.0.1:8880", "")
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

// nginxConfCopy writes dir/nginx.conf, a copy of the nginx config src with
// the upstream servers idalloc1:8880 and idalloc2:8880 replaced by up1 and
// up2, the listener by listen unless that is empty, and the temp
// directories moved under dir, and returns its path.
func nginxConfCopy(t *testing.T, src, dir, up1, up2, listen string) string {
	t.Helper()
	s := readFile(t, src)
	s = replaceOnce(t, s, "server idalloc1:8880", "server "+up1)
	s = replaceOnce(t, s, "server idalloc2:8880", "server "+up2)
	if listen != "" {
		s = replaceOnce(t, s, "listen 8880;", "listen "+listen+";")
	}
	s = replaceOnce(t, s, "http {", "http {\n"+tempPaths(dir))
	conf := filepath.Join(dir, "nginx.conf")
	writeFile(t, conf, s)
	return conf
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

func TestComposeConfig(t *testing.T) {
	compose := tool(t, "docker-compose")
	env := withoutEnv(os.Environ(), "MYSQL_PASSWORD", "MYSQL_ROOT_PASSWORD", "IDALLOC_ADMIN_TOKEN", "GRAFANA_ADMIN_PASSWORD")
	// Project directory = deploy/, so a developer's deploy/.env would leak
	// into the check; point compose at an empty one instead.
	emptyEnv := filepath.Join(t.TempDir(), "empty.env")
	writeFile(t, emptyEnv, "")
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
