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
	env := withoutEnv(os.Environ(), append([]string{"COMPOSE_PROFILES"}, composeSecrets...)...)
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
		// Each database user's password and both of its instances' DSNs
		// (PGPASSWORD on PostgreSQL) must be one and the same variable.
		for _, c := range []struct{ name, value, where string }{
			{"MYSQL_PASSWORD", "pw-from-env-1", "mysql, idalloc1 DSN, idalloc2 DSN"},
			{"POSTGRES_PASSWORD", "pw-from-env-2", "postgres, idalloc1-pg and idalloc2-pg PGPASSWORD"},
		} {
			if n := strings.Count(out, c.value); n != 3 {
				t.Errorf("%s appears %d times, want 3 (%s):\n%s", c.name, n, c.where, out)
			}
		}
		for _, s := range secrets[2:] {
			v := s[strings.IndexByte(s, '=')+1:]
			if !strings.Contains(out, v) {
				t.Errorf("%s does not reach the rendered config", s)
			}
		}
	})

	// The database is chosen by a profile: each is a whole stack of its
	// own, as compose starts it (a service without a profile, or with that
	// one), and with none chosen nothing starts.
	t.Run("each profile is one database and the stack on it", func(t *testing.T) {
		services := composeServices(t, run(t, 60*time.Second, ".", append(env, secrets...), nil, compose, args...))
		if on := enabledServices(services, ""); len(on) > 0 {
			t.Errorf("with no profile chosen, compose would start %v without a database: put them in profiles", names(on))
		}
		for _, c := range []struct{ profile, db, image, dsnHost string }{
			{"mysql", "mysql", "mysql:", "tcp(mysql:3306)"},
			{"postgres", "postgres", "postgres:", "@postgres:5432/"},
		} {
			t.Run(c.profile, func(t *testing.T) {
				on := enabledServices(services, c.profile)
				t.Logf("--profile %s starts %v", c.profile, names(on))
				byName := map[string]composeService{}
				for _, s := range on {
					byName[s.name] = s
				}
				// compose refuses a dependency its profiles leave out.
				for _, s := range on {
					for d := range s.dependsOn {
						if _, ok := byName[d]; !ok {
							t.Errorf("%s depends on %s, which --profile %s does not start", s.name, d, c.profile)
						}
					}
				}
				var dbs []string
				for _, s := range on {
					if strings.HasPrefix(s.image, "mysql:") || strings.HasPrefix(s.image, "postgres:") {
						dbs = append(dbs, s.name)
					}
				}
				db, ok := byName[c.db]
				if len(dbs) != 1 || !ok || !strings.HasPrefix(db.image, c.image) {
					t.Fatalf("--profile %s starts the databases %v, want %s alone (image %s…)", c.profile, dbs, c.db, c.image)
				}
				// Tables the database image made would lack the record
				// -init-schema writes into an empty worker_leases: every
				// first worker lease would wait a TTL + max_drift_error.
				if strings.Contains(db.block, "docker-entrypoint-initdb.d") {
					t.Errorf("%s loads a schema itself: its worker_leases has no genesis record, so each first snowflake lease waits; leave the tables to -init-schema", c.db)
				}
				if !regexp.MustCompile(`(?s)-h\s*127\.0\.0\.1.*SELECT\s+1`).MatchString(db.block) { // YAML may fold the line
					t.Errorf("%s's healthcheck does not connect over TCP (-h 127.0.0.1 … SELECT 1): instances could start against the image's init-phase server", c.db)
				}
				// Two instances of one image, built once, on this database,
				// answering to the names nginx.conf and prometheus.yml use;
				// one makes the tables, and the other starts after it.
				var instances, builds, initers []string
				answers := map[string]bool{}
				for _, s := range on {
					if s.image != "idalloc:local" {
						continue
					}
					instances = append(instances, s.name)
					if s.build {
						builds = append(builds, s.name)
					}
					answers[s.name] = true
					for _, a := range s.aliases {
						answers[a] = true
					}
					if got := s.env["IDALLOC_DRIVER"]; got != c.profile {
						t.Errorf("%s: IDALLOC_DRIVER %q, want %q", s.name, got, c.profile)
					}
					if dsn := s.env["IDALLOC_DSN"]; !strings.Contains(dsn, c.dsnHost) {
						t.Errorf("%s: IDALLOC_DSN %q does not name %s", s.name, dsn, c.dsnHost)
					}
					if s.dependsOn[c.db] != "service_healthy" {
						t.Errorf("%s does not wait for %s to be healthy", s.name, c.db)
					}
					if slices.Contains(s.command, "-init-schema") {
						initers = append(initers, s.name)
					}
				}
				if len(instances) != 2 || len(builds) != 1 {
					t.Errorf("--profile %s: instances on idalloc:local %v, built by %v; want 2, built by one", c.profile, instances, builds)
				}
				if len(initers) != 1 {
					t.Fatalf("--profile %s: instances with -init-schema %v, want one (it makes the tables)", c.profile, initers)
				}
				for _, n := range instances {
					if n != initers[0] && byName[n].dependsOn[initers[0]] != "service_healthy" {
						t.Errorf("%s does not wait for %s, which makes the tables, to be healthy", n, initers[0])
					}
				}
				for _, n := range []string{"idalloc1", "idalloc2"} {
					if !answers[n] {
						t.Errorf("--profile %s: no instance answers to %s (nginx.conf, prometheus.yml)", c.profile, n)
					}
				}
				var front []string
				for _, s := range on {
					if strings.HasPrefix(s.image, "nginx:") && regexp.MustCompile(`published: "?8880"?`).MatchString(s.block) {
						front = append(front, s.name)
					}
				}
				if len(front) != 1 {
					t.Errorf("--profile %s: nginx publishing 8880: %v, want one", c.profile, front)
				}
				for _, n := range []string{"prometheus", "grafana"} {
					if _, ok := byName[n]; !ok {
						t.Errorf("--profile %s does not start %s", c.profile, n)
					}
				}
			})
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

// composeSecrets are the variables docker-compose.yml requires, whichever
// profile runs (compose interpolates every service); MYSQL_PASSWORD and
// POSTGRES_PASSWORD first, whose uses the test counts.
var composeSecrets = []string{"MYSQL_PASSWORD", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "IDALLOC_ADMIN_TOKEN", "GRAFANA_ADMIN_PASSWORD"}

// composeService is what the profile checks read of one service in
// docker-compose config's output (compose v1 and v2 alike: services two
// spaces in, their keys four).
type composeService struct {
	name      string
	block     string // the service's lines as rendered
	profiles  []string
	dependsOn map[string]string // each service depended on, and its condition
	command   []string
	env       map[string]string
	image     string
	build     bool
	aliases   []string
}

func composeServices(t *testing.T, out string) []composeService {
	t.Helper()
	_, body, ok := strings.Cut(out, "\nservices:\n")
	if !ok && strings.HasPrefix(out, "services:\n") {
		body, ok = strings.CutPrefix(out, "services:\n")
	}
	if !ok {
		t.Fatalf("docker-compose config printed no services:\n%s", out)
	}
	if end := regexp.MustCompile(`(?m)^\S`).FindStringIndex(body); end != nil {
		body = body[:end[0]]
	}
	var services []composeService
	serviceRe := regexp.MustCompile(`^  ([A-Za-z0-9._-]+):$`)
	keyRe := regexp.MustCompile(`^    ([a-z_]+):\s*(.*)$`)
	itemRe := regexp.MustCompile(`^\s*- (.+)$`)
	subKeyRe := regexp.MustCompile(`^      ([A-Za-z0-9._-]+):\s*(.*)$`)
	conditionRe := regexp.MustCompile(`^        condition:\s*(\S+)`)
	var s *composeService
	key, dep, inAliases := "", "", false
	for _, line := range strings.Split(body, "\n") {
		if m := serviceRe.FindStringSubmatch(line); m != nil {
			services = append(services, composeService{name: m[1], env: map[string]string{}, dependsOn: map[string]string{}})
			s, key = &services[len(services)-1], ""
			continue
		}
		if s == nil || strings.TrimSpace(line) == "" {
			continue
		}
		s.block += line + "\n"
		if m := keyRe.FindStringSubmatch(line); m != nil {
			key, inAliases = m[1], false
			switch key {
			case "image":
				s.image = strings.Trim(m[2], `"'`)
			case "build":
				s.build = true
			}
			continue
		}
		item := itemRe.FindStringSubmatch(line)
		sub := subKeyRe.FindStringSubmatch(line)
		switch {
		case key == "profiles" && item != nil:
			s.profiles = append(s.profiles, strings.Trim(item[1], `"'`))
		case key == "depends_on" && sub != nil:
			dep = sub[1]
			s.dependsOn[dep] = ""
		case key == "depends_on" && conditionRe.MatchString(line):
			s.dependsOn[dep] = conditionRe.FindStringSubmatch(line)[1]
		case key == "command" && item != nil:
			s.command = append(s.command, strings.Trim(item[1], `"'`))
		case key == "environment" && sub != nil:
			s.env[sub[1]] = strings.Trim(sub[2], `"'`)
		case key == "networks" && strings.TrimSpace(line) == "aliases:":
			inAliases = true
		case key == "networks" && inAliases && item != nil:
			s.aliases = append(s.aliases, strings.Trim(item[1], `"'`))
		}
	}
	if len(services) == 0 {
		t.Fatalf("no services found in docker-compose config's output:\n%s", out)
	}
	return services
}

// enabledServices are the services compose starts with profile active
// ("": none): those without profiles, and those listing it.
func enabledServices(services []composeService, profile string) []composeService {
	var on []composeService
	for _, s := range services {
		if len(s.profiles) == 0 || (profile != "" && slices.Contains(s.profiles, profile)) {
			on = append(on, s)
		}
	}
	return on
}

func names(services []composeService) []string {
	var n []string
	for _, s := range services {
		n = append(n, s.name)
	}
	return n
}
