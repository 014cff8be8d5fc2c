package deploy_test

// Static checks of the config files, each by the tool that loads it:
// promtool for prometheus.yml, alerts.yml and their unit tests, nginx -t for
// nginx.conf and docker-compose config for docker-compose.yml.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPrometheusRules(t *testing.T) {
	promtool := tool(t, "promtool")
	// Run from deploy/ so rule_files resolve next to the config, as they do
	// in /etc/prometheus/ in the container; the config itself is checked
	// as a copy beside a copy of the rules, with a token file that exists.
	for _, c := range []struct {
		name string
		args []string
	}{
		{"check config", []string{"check", "config", prometheusConfigCopy(t, t.TempDir())}},
		{"check rules", []string{"check", "rules", "alerts.yml"}},
		{"unit tests of the alerts", []string{"test", "rules", "alerts.test.yml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Log(run(t, 30*time.Second, ".", nil, nil, promtool, c.args...))
		})
	}
}

func TestNginxConfig(t *testing.T) {
	n := findNginx(t)
	orig := absPath(t, "nginx.conf")
	tmp := t.TempDir()
	// The compose image (1.28) takes the file as it is. An older nginx, or
	// one with a dynamic or missing stream module, checks a copy adapted
	// to it, and so does the fallback copy below.
	conf := orig
	if s, notes := n.adapt(t, readFile(t, orig)); len(notes) > 0 {
		conf = filepath.Join(tmp, "nginx.conf")
		writeFile(t, conf, s)
		for _, note := range notes {
			t.Logf("checking a copy: %s", note)
		}
	}
	// nginx resolves upstream hosts when it loads the file. Preferably the
	// file is checked with idalloc1/idalloc2 resolving through a private
	// /etc/hosts in a mount namespace of its own (root only); otherwise a
	// copy with those names replaced by 127.0.0.1 is checked.
	hosts := filepath.Join(tmp, "hosts")
	writeFile(t, hosts, "127.0.0.1 localhost idalloc1 idalloc2\n")
	check := []string{"-t", "-c", conf, "-e", filepath.Join(tmp, "error.log"), "-g", "pid " + filepath.Join(tmp, "nginx.pid") + ";"}
	if unshare, ok := privateHosts(hosts); ok {
		t.Logf("checking %s, upstream hosts from a private /etc/hosts", conf)
		script := `mount --bind "$0" /etc/hosts && exec "$@"`
		t.Log(run(t, 30*time.Second, tmp, nil, nil, unshare,
			append([]string{"--mount", "--propagation", "private", "sh", "-c", script, hosts, n.bin}, check...)...))
	} else {
		copyDir := subdir(t, tmp, "copy")
		local := [2]string{"127.0.0.1:8880", "127.0.0.1:8880"}
		copyPath := nginxConfCopy(t, n, orig, copyDir, nginxAddrs{http: local, resp: [2]string{"127.0.0.1:6380", "127.0.0.1:6380"}})
		t.Logf("no private mount namespace here: checking a copy with idalloc1/idalloc2 replaced by 127.0.0.1")
		check[2] = copyPath
		t.Log(run(t, 30*time.Second, tmp, nil, nil, n.bin, check...))
	}
	if n.noStream != "" {
		t.Skipf("the file checked without its stream block (RESP on 6380): %s", n.noStream)
	}
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

func TestComposeConfig(t *testing.T) {
	compose := tool(t, "docker-compose")
	env := withoutEnv(os.Environ(), composeSecrets...)
	// Project directory = deploy/, so a developer's deploy/.env would leak
	// into the check; point compose at an empty one instead.
	emptyEnv := filepath.Join(t.TempDir(), "empty.env")
	writeFile(t, emptyEnv, "")
	args := []string{"--env-file", emptyEnv, "-f", "docker-compose.yml", "config"}
	secrets := make([]string, len(composeSecrets))
	for i, name := range composeSecrets {
		secrets[i] = fmt.Sprintf("%s=pw-from-env-%d", name, i+1)
	}

	t.Run("secrets come from the environment", func(t *testing.T) {
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
		// One build, one image for every instance.
		if n := strings.Count(out, "image: idalloc:local"); n != 2 {
			t.Errorf("image idalloc:local is used by %d services, want 2 (idalloc1, idalloc2):\n%s", n, out)
		}
		if n := regexp.MustCompile(`(?m)^    build:`).FindAllStringIndex(out, -1); len(n) != 1 {
			t.Errorf("%d services have a build, want 1 (idalloc1 builds idalloc:local for all):\n%s", len(n), out)
		}
	})

	// No fallback: a stack started without deploy/.env must not run with a
	// well-known admin token or password.
	for i, name := range composeSecrets {
		t.Run("refuses to start without "+name, func(t *testing.T) {
			t.Parallel()
			without := append(slices.Clone(env), secrets[:i]...)
			without = append(without, secrets[i+1:]...)
			for _, set := range [][]string{without, append(slices.Clone(without), name+"=")} {
				out, err := runErr(60*time.Second, ".", set, nil, compose, append(args, "-q")...)
				if err == nil {
					t.Fatalf("docker-compose config accepts the file with %s unset or empty", name)
				}
				if want := "set " + name + " in deploy/.env"; !strings.Contains(out, want) {
					t.Errorf("without %s, docker-compose says %q; want it to say %q", name, strings.TrimSpace(out), want)
				}
			}
		})
	}
}

// composeSecrets are the variables docker-compose.yml requires; MYSQL_PASSWORD
// first, whose uses the test counts.
var composeSecrets = []string{"MYSQL_PASSWORD", "MYSQL_ROOT_PASSWORD", "IDALLOC_ADMIN_TOKEN", "GRAFANA_ADMIN_PASSWORD"}
