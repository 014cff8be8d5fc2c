package deploy_test

// Checks of the deploy files that none of the tools makes: every alert is
// held for at least an evaluation and unit-tested both ways, nginx finds
// recreated instances by itself, the Redis protocol is published through
// nginx, and compose has no obsolete version key.
// They need no tool, so they run everywhere.

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAlertRulesFireOnTroubleOnly(t *testing.T) {
	evalRe := regexp.MustCompile(`(?m)^\s*evaluation_interval: (\S+)$`)
	interval := func(file string) time.Duration {
		t.Helper()
		m := evalRe.FindAllStringSubmatch(readFile(t, file), -1)
		if len(m) != 1 {
			t.Fatalf("%s: want one evaluation_interval, found %d", file, len(m))
		}
		return promDuration(t, file, m[0][1])
	}
	eval := interval("prometheus.yml")
	if got := interval("alerts.test.yml"); got != eval {
		t.Errorf("alerts.test.yml evaluates every %s, prometheus.yml every %s: the unit tests must run the rules as Prometheus does", got, eval)
	}

	// The rules, each from its "- alert:" line to the next.
	rules := readFile(t, "alerts.yml")
	starts := regexp.MustCompile(`(?m)^\s*- alert: (\S+)$`).FindAllStringSubmatchIndex(rules, -1)
	if len(starts) == 0 {
		t.Fatal("alerts.yml has no alert rules")
	}
	forRe := regexp.MustCompile(`(?m)^\s+for: (\S+)$`)
	var alerts []string
	for i, st := range starts {
		end := len(rules)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		name := rules[st[2]:st[3]]
		alerts = append(alerts, name)
		// A condition seen on one evaluation only is a blip, not trouble.
		m := forRe.FindStringSubmatch(rules[st[0]:end])
		if m == nil {
			t.Errorf("alert %s has no for:, so it fires on a single evaluation", name)
			continue
		}
		if d := promDuration(t, "alerts.yml", m[1]); d < eval {
			t.Errorf("alert %s: for: %s is shorter than the evaluation interval %s", name, m[1], eval)
		}
	}

	// The unit tests, each from its "- eval_time:" line to the next (or to
	// the next test group).
	fires, quiet := map[string]bool{}, map[string]bool{}
	tests := readFile(t, "alerts.test.yml")
	cases := regexp.MustCompile(`(?m)^\s*- eval_time:`).FindAllStringIndex(tests, -1)
	nameRe := regexp.MustCompile(`(?m)^\s+alertname: (\S+)$`)
	groupRe := regexp.MustCompile(`(?m)^  - name:`)
	for i, c := range cases {
		end := len(tests)
		if i+1 < len(cases) {
			end = cases[i+1][0]
		}
		body := tests[c[0]:end]
		if g := groupRe.FindStringIndex(body); g != nil {
			body = body[:g[0]]
		}
		m := nameRe.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("alerts.test.yml: a case without alertname:\n%s", body)
		}
		if strings.Contains(body, "exp_labels:") {
			fires[m[1]] = true
		} else {
			quiet[m[1]] = true
		}
	}
	for _, a := range alerts {
		if !fires[a] {
			t.Errorf("alerts.test.yml has no case where %s fires", a)
		}
		if !quiet[a] {
			t.Errorf("alerts.test.yml has no case where %s must stay quiet (an eval_time without exp_alerts)", a)
		}
	}
}

// promDuration parses the Prometheus durations the deploy files use (Go's
// syntax covers them: 15s, 1m, 2m30s).
func promDuration(t *testing.T, file, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: duration %q: %v", file, s, err)
	}
	return d
}

// TestNginxFindsRecreatedInstances: a recreated container has a new
// address, which nginx must look up again by itself, through Docker's DNS,
// rather than keep the one it resolved at start until `nginx -s reload`.
// HTTP (upstream idalloc) and the Redis protocol (stream upstream
// idalloc_resp) alike: each block has its own resolver.
func TestNginxFindsRecreatedInstances(t *testing.T) {
	conf := readFile(t, "nginx.conf")
	httpPart, streamPart, ok := strings.Cut(conf, "\nstream {")
	if !ok {
		t.Fatal("nginx.conf has no stream block (the Redis protocol on 6380)")
	}
	resolverRe := regexp.MustCompile(`(?m)^\s*resolver 127\.0\.0\.11 valid=\d+s\b`)
	for _, c := range []struct{ block, text, upstream string }{
		{"http", httpPart, "idalloc"},
		{"stream", streamPart, "idalloc_resp"},
	} {
		if !resolverRe.MatchString(c.text) {
			t.Errorf("nginx.conf's %s block has no `resolver 127.0.0.11 valid=…` (Docker's DNS, with a short cache)", c.block)
		}
		m := regexp.MustCompile(`(?s)upstream ` + c.upstream + ` \{(.*?)\n\s*\}`).FindStringSubmatch(c.text)
		if m == nil {
			t.Errorf("nginx.conf's %s block has no upstream %s", c.block, c.upstream)
			continue
		}
		if !regexp.MustCompile(`(?m)^\s*zone \S+ \S+;`).MatchString(m[1]) {
			t.Errorf("upstream %s has no zone: servers that resolve must live in shared memory", c.upstream)
		}
		servers := regexp.MustCompile(`(?m)^\s*server (\S+)(.*);`).FindAllStringSubmatch(m[1], -1)
		if len(servers) < 2 {
			t.Errorf("upstream %s has %d servers, want the two instances", c.upstream, len(servers))
		}
		for _, s := range servers {
			if !strings.Contains(" "+s[2]+" ", " resolve ") {
				t.Errorf("upstream %s: server %s is resolved once, at start: add the resolve parameter", c.upstream, s[1])
			}
		}
	}
}

// TestComposePublishesRESP: the Redis protocol goes through the stack as
// HTTP does: every instance listens on 6380 (IDALLOC_RESP_ADDR), nginx's
// stream proxy listens on 6380 and sends to the instances' 6380, compose
// publishes it, and nginx keeps an idle connection longer than idalloc
// does, so that idalloc's resp_idle_timeout is the one that applies.
func TestComposePublishesRESP(t *testing.T) {
	compose := readFile(t, "docker-compose.yml")
	anchor, _, _ := strings.Cut(compose, "\nservices:")
	if !regexp.MustCompile(`(?m)^    IDALLOC_RESP_ADDR: "?:6380"?$`).MatchString(anchor) {
		t.Error(`docker-compose.yml: the x-idalloc environment does not set IDALLOC_RESP_ADDR: ":6380"`)
	}
	if !regexp.MustCompile(`(?m)^      - "6380:6380"$`).MatchString(compose) {
		t.Error(`docker-compose.yml: nginx does not publish "6380:6380"`)
	}
	_, stream, _ := strings.Cut(readFile(t, "nginx.conf"), "\nstream {")
	for _, want := range []string{"listen 6380;", "server idalloc1:6380 ", "server idalloc2:6380 ", "proxy_pass idalloc_resp;"} {
		if !strings.Contains(stream, want) {
			t.Errorf("nginx.conf's stream block lacks %q", want)
		}
	}
	m := regexp.MustCompile(`(?m)^\s*proxy_timeout (\d+)m;`).FindStringSubmatch(stream)
	idle := regexp.MustCompile(`"resp_idle_timeout": "(\d+)m"`).FindStringSubmatch(readFile(t, "../config.json"))
	if m == nil || idle == nil {
		t.Fatalf("want proxy_timeout in minutes in nginx.conf's stream block (found %v) and resp_idle_timeout in minutes in config.json (found %v)", m, idle)
	}
	if nginxMin, idaMin := atoi(t, m[1]), atoi(t, idle[1]); nginxMin <= idaMin {
		t.Errorf("nginx's proxy_timeout %dm is not above resp_idle_timeout %dm: nginx would cut idle connections first", nginxMin, idaMin)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrometheusSendsTheAdminToken: compose always sets an admin token,
// and with one /metrics needs it, so the stack's Prometheus sends it:
// prometheus.yml's idalloc job reads it from promTokenFile, which compose's
// prometheus service writes from IDALLOC_ADMIN_TOKEN at each start, on a
// tmpfs, before it runs Prometheus.
func TestPrometheusSendsTheAdminToken(t *testing.T) {
	prom := readFile(t, "prometheus.yml")
	_, job, _ := strings.Cut(prom, "- job_name: idalloc\n")
	job, _, _ = strings.Cut(job, "- job_name:")
	for _, want := range []string{"    authorization:\n", "      type: Bearer\n", "      credentials_file: " + promTokenFile + "\n"} {
		if !strings.Contains(job, want) {
			t.Errorf("prometheus.yml: the idalloc job lacks %q", want)
		}
	}
	compose := readFile(t, "docker-compose.yml")
	const fromEnv = `IDALLOC_ADMIN_TOKEN: "${IDALLOC_ADMIN_TOKEN:?`
	if anchor, _, _ := strings.Cut(compose, "\nservices:"); !strings.Contains(anchor, fromEnv) {
		t.Errorf("docker-compose.yml: the instances do not take IDALLOC_ADMIN_TOKEN from the environment (%s…)", fromEnv)
	}
	_, svc, ok := strings.Cut(compose, "\n  prometheus:\n")
	if !ok {
		t.Fatal("docker-compose.yml has no prometheus service")
	}
	if end := regexp.MustCompile(`\n  [a-z]`).FindStringIndex(svc); end != nil {
		svc = svc[:end[0]]
	}
	dir := promTokenFile[:strings.LastIndexByte(promTokenFile, '/')]
	for _, want := range []string{
		fromEnv,
		"    tmpfs:\n      - " + dir + "\n",
		`printf '%s' "$$IDALLOC_ADMIN_TOKEN" > ` + promTokenFile + " ",
		`exec /bin/prometheus "$$@"`,
	} {
		if !strings.Contains(svc, want) {
			t.Errorf("docker-compose.yml: the prometheus service lacks %q", want)
		}
	}
}

// TestComposeFile: the version key is obsolete in the Compose Specification
// and compose v2 warns about it.
func TestComposeFile(t *testing.T) {
	if regexp.MustCompile(`(?m)^version:`).MatchString(readFile(t, "docker-compose.yml")) {
		t.Error("docker-compose.yml has a top-level version: key; the Compose Specification has none")
	}
}

// TestEnvExample: .env.example, copied to .env, names every secret compose
// requires and chooses a profile, so that `docker compose up` starts a
// whole stack.
func TestEnvExample(t *testing.T) {
	example := readFile(t, ".env.example")
	for _, name := range composeSecrets {
		if !regexp.MustCompile(`(?m)^` + name + `=$`).MatchString(example) {
			t.Errorf(".env.example lacks the line %s= (compose requires it)", name)
		}
	}
	m := regexp.MustCompile(`(?m)^COMPOSE_PROFILES=(\S+)$`).FindStringSubmatch(example)
	if m == nil || (m[1] != "mysql" && m[1] != "postgres") {
		t.Errorf(".env.example does not choose a profile (COMPOSE_PROFILES=mysql or postgres); found %v", m)
	}
}
