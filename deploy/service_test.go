package deploy_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServiceBehindTheStack starts two instances of the Dockerfile's binary
// with the shipped config.json (each on its own embedded store), then checks
// the scrape with promtool, the alert and dashboard queries against a real
// Prometheus scraping both, and nginx.conf in front of them: HTTP routing
// and draining, and the Redis protocol through its stream proxy.
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
		for range 5 {
			in.mustGet(t, "/alloc?app_tag=test_business")
		}
		for range 3 {
			in.mustGet(t, "/snowflake")
		}
	}
	scrape := inst[0].mustGet(t, "/metrics")
	// With the admin token set, as compose sets it, the scrape needs it.
	if resp, err := client.Get("http://" + inst[0].addr + "/metrics"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the admin token: got %d, want 401", resp.StatusCode)
	}

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
			data := readFile(t, file)
			for _, name := range uniq(regexp.MustCompile(`idalloc_[a-z0-9_]*[a-z0-9]`).FindAllString(data, -1)) {
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
		deadline := time.Now().Add(45 * time.Second)
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
				t.Fatalf("after 45s Prometheus has idalloc_ids_issued_total for %v, want %v", got, want)
			}
			time.Sleep(250 * time.Millisecond)
		}

		// Evaluation errors (a many-to-many match, say) only show on real
		// series, which promtool's unit tests do not have.
		// Deadlines are generous: on a 2-core machine busy with other
		// packages' tests, Prometheus's first evaluations come late.
		deadline = time.Now().Add(45 * time.Second)
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
				t.Fatalf("%d of %d rules still not evaluated after 45s", pending, len(rules))
			}
			time.Sleep(250 * time.Millisecond)
		}

		// rate() needs two samples in its window.
		deadline = time.Now().Add(45 * time.Second)
		for len(prom.query(t, `rate(idalloc_ids_issued_total[1m])`)) < 2 {
			if time.Now().After(deadline) {
				t.Fatal("after 45s Prometheus still has no rate of idalloc_ids_issued_total for both instances")
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

	// One nginx for the subtests below, started by the first that runs.
	var px *nginxProxy
	nginxFor := func(t *testing.T) *nginxProxy {
		t.Helper()
		if px == nil {
			px = startNginx(t, procs, findNginx(t), tmp, inst)
		}
		return px
	}

	// Before the drain below, which stops one instance.
	t.Run("nginx proxies the Redis protocol to both instances", func(t *testing.T) {
		proxy := nginxFor(t)
		if proxy.respAddr == "" {
			t.Skipf("no stream proxy: %s", proxy.noStream)
		}
		checkRESPThroughNginx(t, proxy, inst)
	})

	t.Run("nginx routes, hides admin routes and rides out a drain", func(t *testing.T) {
		proxy := nginxFor(t)

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

		// deploy/README.md's rolling restart: SIGTERM one instance; through its
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

type dashboardQuery struct{ title, expr string }

// dashboardQueries are the PromQL expressions of every panel.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	data := readFile(t, "grafana/dashboards/idalloc.json")
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
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
