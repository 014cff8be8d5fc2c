package deploy_test

// The stack the service test runs: idalloc instances from the Dockerfile's
// binary, a Prometheus scraping them and nginx in front of them, each a
// process of a procGroup, with clients for what the test asks of them.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type instance struct {
	name, addr string
	respAddr   string // the Redis protocol front end (resp_addr)
	proc       *proc
}

// adminToken is the stack's IDALLOC_ADMIN_TOKEN, which compose always sets.
const adminToken = "deploy-test-admin-token"

// startInstance runs the binary as the image does (-config with the
// shipped config.json, overrides from IDALLOC_*, the Redis protocol on and
// an admin token set, as compose runs it), on an embedded store, and waits
// until it answers /health. The ports were free a moment before; when
// another process took one in between (tests of other packages dial and
// listen all the time), the instance exits saying so and starts again on
// new ports.
func startInstance(t *testing.T, g *procGroup, bin, root, tmp, name string) *instance {
	t.Helper()
	dir := subdir(t, tmp, name)
	var in *instance
	attempt := 0
	startServing(t, name, 45*time.Second, func() (*proc, func() bool) {
		attempt++
		addr, respAddr := freeAddr(t), freeAddr(t)
		env := append(withoutEnv(os.Environ(), "IDALLOC_HTTP_ADDR", "IDALLOC_RESP_ADDR", "IDALLOC_DRIVER", "IDALLOC_DSN", "IDALLOC_ADMIN_TOKEN"),
			"IDALLOC_HTTP_ADDR="+addr,
			"IDALLOC_RESP_ADDR="+respAddr,
			"IDALLOC_DRIVER=sqlite",
			"IDALLOC_DSN="+filepath.Join(dir, "idalloc.db"),
			"IDALLOC_ADMIN_TOKEN="+adminToken,
		)
		p := g.start(t, fmt.Sprintf("%s-%d", name, attempt), dir, env, bin, "-config", filepath.Join(root, "config.json"))
		in = &instance{name: name, addr: addr, respAddr: respAddr, proc: p}
		return p, func() bool {
			st, _, err := in.get("/health")
			return err == nil && st == http.StatusOK
		}
	})
	return in
}

// get asks the instance directly, as an operator does: with the admin
// token, which /metrics needs.
func (in *instance) get(path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+in.addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := client.Do(req)
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

// startPrometheus scrapes inst every second and evaluates alerts.yml, with
// prometheus.yml's authorization for the idalloc job as it stands, reading
// the admin token from a file of the test's.
func startPrometheus(t *testing.T, g *procGroup, bin, tmp string, inst []*instance) *prometheus {
	t.Helper()
	dir := subdir(t, tmp, "prometheus")
	rules := absPath(t, "alerts.yml")
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
%s    static_configs:
      - targets: [%s]
`, rules, scrapeAuthorization(t, dir), strings.Join(targets, ", "))
	confPath := filepath.Join(dir, "prometheus.yml")
	writeFile(t, confPath, conf)
	prom := &prometheus{}
	attempt := 0
	prom.proc = startServing(t, "prometheus", 15*time.Second, func() (*proc, func() bool) {
		attempt++
		addr := freeAddr(t)
		prom.base = "http://" + addr
		p := g.start(t, fmt.Sprintf("prometheus-%d", attempt), dir, os.Environ(), bin,
			"--config.file="+confPath,
			"--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr,
		)
		return p, func() bool {
			resp, err := client.Get(prom.base + "/-/ready")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
	})
	return prom
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
	// respAddr is the stream proxy's listener (RESP); "" when this nginx
	// cannot load the stream block, for the reason in noStream.
	respAddr, noStream string
	proc               *proc
}

// startNginx runs a copy of nginx.conf with the upstreams pointed at the
// test's instances and the listeners at free ports; everything else in the
// file is what the container runs (adapted to this nginx: nginxHere.adapt).
func startNginx(t *testing.T, g *procGroup, n nginxHere, tmp string, inst []*instance) *nginxProxy {
	t.Helper()
	dir := subdir(t, tmp, "nginx")
	px := &nginxProxy{noStream: n.noStream}
	attempt := 0
	px.proc = startServing(t, "nginx", 10*time.Second, func() (*proc, func() bool) {
		attempt++
		addrs := nginxAddrs{
			http:   [2]string{inst[0].addr, inst[1].addr},
			resp:   [2]string{inst[0].respAddr, inst[1].respAddr},
			listen: freeAddr(t),
		}
		if n.noStream == "" {
			addrs.respListen = freeAddr(t)
			px.respAddr = addrs.respListen
		}
		px.base = "http://" + addrs.listen
		conf := nginxConfCopy(t, n, "nginx.conf", dir, addrs)
		// One foreground process, no workers: SIGTERM to its PID stops it all.
		p := g.start(t, fmt.Sprintf("nginx-%d", attempt), dir, os.Environ(), n.bin, "-c", conf, "-e", filepath.Join(dir, "error.log"),
			"-g", "daemon off; master_process off; pid "+filepath.Join(dir, "nginx.pid")+";")
		return p, func() bool {
			for _, addr := range []string{addrs.listen, addrs.respListen} {
				if addr == "" {
					continue
				}
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					return false
				}
				c.Close()
			}
			return true
		}
	})
	return px
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
